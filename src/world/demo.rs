//! The built-in demo world: the scenarios under `cases/`, embedded in the binary.

use super::{World, WorldError};

/// One built-in scenario, for `sitrep demo --list` and the chooser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DemoCase {
    pub name: &'static str,
    pub title: String,
}

macro_rules! case {
    ($name:literal, [$($file:literal),* $(,)?]) => {
        (
            $name,
            &[$(($file, include_str!(concat!("../../cases/", $name, "/", $file)))),*],
        )
    };
}

type Files = &'static [(&'static str, &'static str)];

const CASES: &[(&str, Files)] = &[
    case!(
        "checkout-bad-deploy",
        [
            "case.toml",
            "alert.json",
            "recordings.ndjson",
            "expect.toml",
            "effects.toml",
            "after-rollback.ndjson",
        ]
    ),
    case!(
        "search-cpu-saturation",
        [
            "case.toml",
            "alert.json",
            "recordings.ndjson",
            "expect.toml",
            "effects.toml",
            "after-scale.ndjson",
        ]
    ),
    case!(
        "payments-fraud-check-down",
        [
            "case.toml",
            "alert.json",
            "recordings.ndjson",
            "expect.toml",
            "effects.toml",
            "after-restart.ndjson",
        ]
    ),
    case!(
        "orders-db-node-lost",
        [
            "case.toml",
            "alert.json",
            "recordings.ndjson",
            "expect.toml",
            "effects.toml",
            "after-delete.ndjson",
        ]
    ),
    case!(
        "billing-false-alarm",
        [
            "case.toml",
            "alert.json",
            "recordings.ndjson",
            "expect.toml",
        ]
    ),
    case!(
        "catalog-image-pull",
        [
            "case.toml",
            "alert.json",
            "recordings.ndjson",
            "expect.toml",
            "effects.toml",
            "after-rollback.ndjson",
        ]
    ),
    // checkout-bad-deploy paged from a Datadog monitor and read through Datadog and Kubernetes.
    case!(
        "checkout-datadog-monitor",
        [
            "case.toml",
            "alert.json",
            "recordings.ndjson",
            "expect.toml",
            "effects.toml",
            "after-rollback.ndjson",
        ]
    ),
    // Recorded from a real PostgreSQL server by scripts/record-db-demo.
    case!(
        "checkout-db-lock-contention",
        [
            "case.toml",
            "alert.json",
            "recordings.ndjson",
            "expect.toml",
            "effects.toml",
            "after-terminate.ndjson",
        ]
    ),
    // Recorded through the AWS client from moto and a Performance Insights fake by
    // scripts/record-rds-demo.
    case!(
        "catalog-rds-cpu-query",
        [
            "case.toml",
            "alert.json",
            "recordings.ndjson",
            "expect.toml",
        ]
    ),
];

fn title_of(case_toml: &str) -> Option<String> {
    let v: toml::Table = toml::from_str(case_toml).ok()?;
    v.get("title")?.as_str().map(str::to_string)
}

/// Every built-in scenario, in a stable order.
pub fn list() -> Vec<DemoCase> {
    CASES
        .iter()
        .map(|(name, files)| DemoCase {
            name,
            title: files
                .iter()
                .find(|(f, _)| *f == "case.toml")
                .and_then(|(_, text)| title_of(text))
                .unwrap_or_else(|| name.to_string()),
        })
        .collect()
}

/// The names of the built-in scenarios.
pub fn names() -> Vec<&'static str> {
    CASES.iter().map(|(name, _)| *name).collect()
}

/// The files of one scenario (relative path, contents), e.g. to write it out as a case directory.
pub fn files(name: &str) -> Option<Vec<(String, String)>> {
    CASES.iter().find(|(n, _)| *n == name).map(|(_, files)| {
        files
            .iter()
            .map(|(f, text)| (f.to_string(), text.to_string()))
            .collect()
    })
}

/// Load a built-in scenario as a replaying world.
pub fn load(name: &str) -> Result<World, DemoError> {
    let files = files(name).ok_or_else(|| DemoError::Unknown {
        name: name.to_string(),
        known: names().join(", "),
    })?;
    World::from_case_files(name, files).map_err(DemoError::World)
}

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("no demo scenario `{name}` (known: {known})")]
    Unknown { name: String, known: String },
    #[error(transparent)]
    World(#[from] WorldError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_loads_and_has_a_title() {
        for case in list() {
            assert_ne!(case.title, case.name, "{} has no title", case.name);
            let world = load(case.name).unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert!(world.case().is_some_and(|c| c.alert.is_some()));
        }
    }

    #[test]
    fn unknown_scenario_names_the_known_ones() {
        let err = load("nope")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("checkout-bad-deploy"), "{err}");
    }
}
