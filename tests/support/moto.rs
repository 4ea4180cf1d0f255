//! moto's server (PyPI `moto[server]`) on a free loopback port for AWS tests, stopped on drop.
//! Included by path (`#[path = "support/moto.rs"] mod moto;`) from the tests that need it.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running moto server.
pub struct Moto {
    child: Child,
    pub url: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

/// How to run moto's server: `moto_server`, else `python3 -m moto.server`.
fn command() -> Option<Vec<String>> {
    let works = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if works("moto_server", &["--help"]) {
        return Some(vec!["moto_server".into()]);
    }
    if works("python3", &["-m", "moto.server", "--help"]) {
        return Some(vec!["python3".into(), "-m".into(), "moto.server".into()]);
    }
    None
}

/// Starts moto; `None` (skip) only when it is not installed and this is not CI.
pub fn start() -> Option<Moto> {
    let Some(command) = command() else {
        if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
            panic!("moto_server is not installed (pip install 'moto[server]'); CI needs it");
        }
        println!("skipped: moto_server not found (pip install 'moto[server]')");
        return None;
    };
    let port = free_port();
    let child = Command::new(&command[0])
        .args(&command[1..])
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start moto's server: {e}"));
    let moto = Moto {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "moto_server did not listen");
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(moto)
}
