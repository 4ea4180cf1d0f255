//! Catalog tool names (`kubernetes.pods`) mapped both ways to names providers accept
//! (letters, digits, `_` and `-`, at most 64 characters).

use super::ToolCall;
use std::collections::BTreeMap;

const MAX: usize = 64;

/// The mapping for one request's tool list.
#[derive(Clone, Debug, Default)]
pub struct ToolNames {
    to_wire: BTreeMap<String, String>,
    from_wire: BTreeMap<String, String>,
}

impl ToolNames {
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> ToolNames {
        let mut out = ToolNames::default();
        for name in names {
            let mut wire = sanitize(name);
            // Two names that sanitize alike (or cut alike) get a numbered suffix.
            let mut n = 2;
            while out.from_wire.contains_key(&wire) {
                let suffix = format!("_{n}");
                let base: String = sanitize(name).chars().take(MAX - suffix.len()).collect();
                wire = format!("{base}{suffix}");
                n += 1;
            }
            out.to_wire.insert(name.to_string(), wire.clone());
            out.from_wire.insert(wire, name.to_string());
        }
        out
    }

    /// The wire name for a catalog name (sanitized even when not in the list).
    pub fn wire(&self, name: &str) -> String {
        self.to_wire
            .get(name)
            .cloned()
            .unwrap_or_else(|| sanitize(name))
    }

    /// The catalog name for a wire name; an unknown name is kept as sent, so the loop can
    /// answer "no such tool".
    pub fn catalog(&self, wire: &str) -> String {
        self.from_wire
            .get(wire)
            .cloned()
            .unwrap_or_else(|| wire.to_string())
    }

    pub(super) fn map_back(&self, calls: &mut [ToolCall]) {
        for c in calls {
            c.name = self.catalog(&c.name);
        }
    }
}

fn sanitize(name: &str) -> String {
    let s: String = name
        .replace('.', "__")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX)
        .collect();
    if s.is_empty() { "tool".into() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(s: &str) -> bool {
        !s.is_empty()
            && s.len() <= MAX
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn catalog_names_round_trip_and_satisfy_provider_rules() {
        let long = format!("mcp.{}", "x".repeat(100));
        let long2 = format!("mcp.{}y", "x".repeat(100));
        let names = [
            "kubernetes.pods",
            "kubernetes_pods",
            "kubernetes__pods",
            "mcp.time/get current time",
            long.as_str(),
            long2.as_str(),
        ];
        let map = ToolNames::new(names);
        let mut wires = std::collections::BTreeSet::new();
        for n in names {
            let w = map.wire(n);
            assert!(valid(&w), "{w}");
            assert!(wires.insert(w.clone()), "duplicate wire name {w}");
            assert_eq!(map.catalog(&w), n);
        }
        assert_eq!(map.wire("kubernetes.pods"), "kubernetes__pods");
        assert_eq!(map.catalog("nope"), "nope");
    }
}
