//! Which Kubernetes cluster an investigation reads and acts on, when several are configured:
//! `--context NAME`, else the alert's cluster label, else the first one, said out loud.

/// The cluster to use and, when the choice needs saying, a note for the session.
pub fn pick(
    configured: &[String],
    chosen: Option<&str>,
    labelled: Option<&str>,
) -> (Option<String>, Option<String>) {
    let Some(default) = configured.first() else {
        // One cluster, unnamed: there is nothing to choose.
        return (None, None);
    };
    let known = |c: &str| configured.iter().any(|n| n == c);
    if let Some(c) = chosen.filter(|c| !c.is_empty()) {
        if known(c) {
            return (Some(c.to_string()), None);
        }
        return (
            Some(default.clone()),
            Some(format!(
                "--context {c} is not a configured cluster ({}): reading {default}",
                configured.join(", ")
            )),
        );
    }
    match labelled.filter(|c| !c.is_empty()) {
        Some(c) if known(c) => (Some(c.to_string()), None),
        Some(c) => (
            Some(default.clone()),
            Some(format!(
                "the alert names cluster {c}, which is not configured ({}): reading {default}",
                configured.join(", ")
            )),
        ),
        None if configured.len() > 1 => (
            Some(default.clone()),
            Some(format!(
                "{} clusters are configured ({}) and nothing names one: this investigation reads {default} only (--context NAME or a cluster label picks another)",
                configured.len(),
                configured.join(", ")
            )),
        ),
        None => (Some(default.clone()), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["prod-eu".into(), "prod-us".into()]
    }

    #[test]
    fn the_option_beats_the_label_and_unknown_names_fall_back_out_loud() {
        assert_eq!(
            pick(&names(), Some("prod-us"), Some("prod-eu"))
                .0
                .as_deref(),
            Some("prod-us")
        );
        assert_eq!(
            pick(&names(), None, Some("prod-us")),
            (Some("prod-us".into()), None)
        );
        let (c, note) = pick(&names(), None, Some("staging"));
        assert_eq!(c.as_deref(), Some("prod-eu"));
        assert!(note.is_some_and(|n| n.contains("staging")));
        let (c, note) = pick(&names(), None, None);
        assert_eq!(c.as_deref(), Some("prod-eu"));
        assert!(note.is_some_and(|n| n.contains("prod-eu, prod-us")));
        assert_eq!(pick(&[], Some("x"), Some("y")), (None, None));
    }
}
