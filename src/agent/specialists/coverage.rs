//! Per integration, what the calls of an investigation got: configured, answered, empty, failed.

/// The integrations an investigation can draw on, in the order they are reported.
pub const INTEGRATIONS: [&str; 8] = [
    "kubernetes",
    "prometheus",
    "alertmanager",
    "loki",
    "github",
    "postgres",
    "aws",
    "datadog",
];

/// Integrations reported in coverage only when configured: their absence says nothing about a
/// Kubernetes workload.
const OPTIONAL_INTEGRATIONS: [&str; 3] = ["postgres", "aws", "datadog"];

/// Per integration, what the calls of this investigation got: configured, answered, empty, failed.
pub fn coverage(
    configured: &[String],
    calls: &[crate::model::ToolCallState],
) -> std::collections::BTreeMap<String, crate::reason::Coverage> {
    let mut out = std::collections::BTreeMap::new();
    for name in INTEGRATIONS {
        let mut c = crate::reason::Coverage {
            configured: configured.iter().any(|c| c == name),
            ..Default::default()
        };
        if !c.configured && OPTIONAL_INTEGRATIONS.contains(&name) {
            continue;
        }
        for call in calls
            .iter()
            .filter(|t| t.tool.split('.').next() == Some(name))
        {
            match &call.outcome {
                Some(Ok(summary)) => {
                    c.answered += 1;
                    if summary.starts_with("0 ") {
                        c.empty += 1;
                    }
                }
                Some(Err(e)) => {
                    c.failed += 1;
                    if c.error.is_none() {
                        c.error = Some(e.lines().next().unwrap_or("").chars().take(160).collect());
                    }
                }
                None => {}
            }
        }
        out.insert(name.to_string(), c);
    }
    out
}
