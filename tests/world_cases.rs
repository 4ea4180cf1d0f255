//! Every external benchmark case loads, and every recording in it parses with the production clients.

mod support;

use sitrep::integrations::transport::parse_recordings;
use sitrep::world::World;
use std::path::PathBuf;

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/cases/opensre-eks")
}

#[tokio::test]
async fn every_shared_case_loads_and_every_recording_parses() {
    let root = cases_dir();
    let Ok(entries) = std::fs::read_dir(&root) else {
        eprintln!("SKIP: {} is absent", root.display());
        return;
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("case.toml").is_file())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no cases under {}", root.display());
    let mut total = 0;
    for dir in &dirs {
        let world = World::from_case_dir(dir).unwrap_or_else(|e| panic!("{e}"));
        let case = world.case().expect("a replay world has its case");
        assert!(
            !case.id.is_empty() && !case.title.is_empty(),
            "{}",
            dir.display()
        );
        assert_eq!(world.now(), case.now);
        let alert = case.alert.as_ref().expect("every shared case has an alert");
        assert!(!alert.primary().labels.is_empty());
        let expect = case
            .expect
            .as_ref()
            .expect("every shared case has expect.toml");
        assert!(expect.category.is_some(), "{}: no category", dir.display());
        assert!(world.has("kubernetes"));

        let text = std::fs::read_to_string(dir.join("recordings.ndjson")).expect("read recordings");
        let recordings = parse_recordings("recordings.ndjson", &text).expect("recordings parse");
        for rec in &recordings {
            let n = support::exercise(&world, rec)
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            let is_list = rec.path.ends_with('s')
                || rec.path.ends_with("query_range")
                || rec.path.ends_with("log");
            assert!(
                n > 0 || !is_list || rec.path.contains("events"),
                "{}: {} gave nothing",
                dir.display(),
                rec.path
            );
            total += 1;
        }
    }
    eprintln!("{} cases, {total} recordings parsed", dirs.len());
}

#[test]
fn a_broken_case_names_the_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("case.toml"),
        "now = \"2026-04-18T10:47:00Z\"\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("recordings.ndjson"),
        "{\"integration\":\"loki\",\"method\":\"GET\",\"path\":\"/x\",\"query\":{},\"status\":200,\"body\":{}}\n{\"integration\": 3}\n",
    )
    .expect("write");
    let err = World::from_case_dir(dir.path())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let want = format!("{}/recordings.ndjson:2:", dir.path().display());
    assert!(err.starts_with(&want), "{err}");

    std::fs::write(
        dir.path().join("alert.json"),
        "{\n  \"alerts\": [ oops ]\n}",
    )
    .expect("write");
    let err = World::from_case_dir(dir.path())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("alert.json:2:"), "{err}");
}
