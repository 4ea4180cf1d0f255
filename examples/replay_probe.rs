//! Opens a session the way the replay console does and times it: the first frame (open, index,
//! fold to the start), seeking to 0%..100% and to single records, and the process's peak RSS.
//!
//! Usage: `replay_probe FILE`; prints `first_frame_ms=.. first_frame_cpu_ms=.. seek_max_ms=..
//! peak_rss_kib=..` (CPU time tells the work from the waiting on a shared machine).

use sitrep::session::Replay;
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let path = std::env::args()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: replay_probe FILE"))?;
    let start = Instant::now();
    let mut replay = open(&path)?;
    replay.pause();
    replay.advance(std::time::Duration::ZERO);
    let first = replay.incident().events;
    let first_frame = start.elapsed();
    let first_cpu = cpu_ms();
    let open_rss = peak_rss_kib();
    let mut seek_max = 0.0_f64;
    let len = replay.len();
    let mut targets: Vec<usize> = (0..=10).map(|k| len * k / 10).collect();
    // Positions just before keyframes and in between, and backwards jumps.
    targets.extend([
        len.saturating_sub(1),
        len / 3 + 17,
        len / 7 * 5 + 63,
        1,
        len / 2 - 1,
    ]);
    for n in targets {
        let s = Instant::now();
        replay.seek_index(n);
        std::hint::black_box(replay.incident().events);
        seek_max = seek_max.max(s.elapsed().as_secs_f64() * 1000.0);
    }
    for k in (0..=10).rev() {
        let s = Instant::now();
        replay.seek_fraction(k as f64 / 10.0);
        std::hint::black_box(replay.incident().events);
        seek_max = seek_max.max(s.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "records={len} first_frame_events={first} first_frame_ms={:.1} first_frame_cpu_ms={first_cpu:.1} seek_max_ms={seek_max:.1} open_peak_rss_kib={open_rss} peak_rss_kib={}",
        first_frame.as_secs_f64() * 1000.0,
        peak_rss_kib()
    );
    Ok(())
}

fn open(path: &str) -> anyhow::Result<Replay> {
    Ok(Replay::open(std::path::Path::new(path))?.replay)
}

/// CPU time the process has used: on a shared machine, what the work cost without the waiting.
fn cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } != 0 {
        return -1.0;
    }
    ts.tv_sec as f64 * 1000.0 + ts.tv_nsec as f64 / 1e6
}

fn peak_rss_kib() -> i64 {
    // SAFETY: getrusage only writes into the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } == 0 {
        usage.ru_maxrss
    } else {
        -1
    }
}
