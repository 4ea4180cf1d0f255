//! Writes a metamorphic rewrite of a case directory: `rewrite_case SRC DST rename|shift|bystander`.
fn main() -> anyhow::Result<()> {
    let a: Vec<String> = std::env::args().collect();
    let how = match a.get(3).map(String::as_str) {
        Some("rename") => sitrep::eval::metamorphic::Rewrite::Rename,
        Some("shift") => sitrep::eval::metamorphic::Rewrite::ShiftTime(chrono::Duration::days(41)),
        _ => sitrep::eval::metamorphic::Rewrite::AddNeighbour,
    };
    let (Some(src), Some(dst)) = (a.get(1), a.get(2)) else {
        anyhow::bail!("usage: rewrite_case SRC DST rename|shift|bystander");
    };
    let r = sitrep::eval::metamorphic::rewrite_case(src.as_ref(), dst.as_ref(), &how)?;
    for (old, new) in &r.names {
        println!("{old} -> {new}");
    }
    Ok(())
}
