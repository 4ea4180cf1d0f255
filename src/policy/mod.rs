//! Deterministic policy: approval rules per risk, read-only mode, and redaction of secrets.

pub mod redact;

use crate::model::Risk;
use crate::model::catalog::Catalog;
use std::collections::BTreeSet;

/// The default medium-risk veto countdown, in seconds.
pub const DEFAULT_VETO_SECS: f64 = 30.0;

/// What the policy needs to know besides the action itself.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyConfig {
    /// Refuse every mutating action.
    pub read_only: bool,
    /// Propose actions but never execute them and never wait for a decision (eval).
    pub diagnosis_only: bool,
    /// Medium risk: seconds the operator has to veto before the action runs.
    pub veto_secs: f64,
    /// Nobody is watching (a session `sitrep serve` started): a veto countdown would run the
    /// action with no one to veto it, so medium risk waits for an explicit approval too.
    pub unattended: bool,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            read_only: false,
            diagnosis_only: false,
            veto_secs: DEFAULT_VETO_SECS,
            unattended: false,
        }
    }
}

/// How an action may go ahead.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    /// Runs without asking (low risk).
    Run,
    /// Runs after `secs` unless an operator denies it (medium risk).
    Veto { secs: f64 },
    /// Needs `approvals` approvals from that many distinct operators (high: 1, critical: 2).
    Approve { approvals: u8 },
    /// Never runs; the reason is recorded as `ActionSkipped`.
    Refuse { reason: String },
}

/// The rule for an action of `risk` and a built-in `kind` under `cfg`.
pub fn rule(kind: &str, risk: Risk, cfg: &PolicyConfig) -> Rule {
    rule_in(&Catalog::default(), kind, risk, cfg)
}

/// The rule for an action of `risk` and `kind` under `cfg`, with `catalog`'s reading of the kind
/// (a run's catalog also knows the tools its world registered).
pub fn rule_in(catalog: &Catalog, kind: &str, risk: Risk, cfg: &PolicyConfig) -> Rule {
    if catalog.is_mutating(kind) && cfg.read_only {
        return Rule::Refuse {
            reason: "read-only mode refuses every mutating action".into(),
        };
    }
    if cfg.diagnosis_only {
        return Rule::Refuse {
            reason: "diagnosis only: actions are proposed, never executed".into(),
        };
    }
    // The catalog's floor holds even when a caller forgot to apply it to the proposal.
    match risk.max(catalog.risk_floor(kind)) {
        Risk::Low => Rule::Run,
        Risk::Medium if cfg.unattended => Rule::Approve { approvals: 1 },
        Risk::Medium => Rule::Veto {
            secs: cfg.veto_secs.max(0.0),
        },
        Risk::High => Rule::Approve { approvals: 1 },
        Risk::Critical => Rule::Approve { approvals: 2 },
    }
}

/// Distinct operators that must approve an action of `risk`.
pub fn approvals_needed(risk: Risk) -> u8 {
    match risk {
        Risk::Low | Risk::Medium => 0,
        Risk::High => 1,
        Risk::Critical => 2,
    }
}

/// Whether the approvals given so far (operator names, possibly repeated) satisfy `risk`.
/// Repeats by the same operator count once: two approvals from one person are one approval.
pub fn satisfied<S: AsRef<str>>(risk: Risk, approvers: &[S]) -> bool {
    let distinct: BTreeSet<&str> = approvers
        .iter()
        .map(AsRef::as_ref)
        .filter(|s| !s.is_empty())
        .collect();
    distinct.len() >= usize::from(approvals_needed(risk))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> PolicyConfig {
        PolicyConfig::default()
    }

    #[test]
    fn each_risk_maps_to_its_rule() {
        let k = "kubernetes.pods";
        assert_eq!(rule(k, Risk::Low, &cfg()), Rule::Run);
        let k = "kubernetes.rollout_restart";
        assert_eq!(rule(k, Risk::Medium, &cfg()), Rule::Veto { secs: 30.0 });
        assert_eq!(rule(k, Risk::High, &cfg()), Rule::Approve { approvals: 1 });
        assert_eq!(
            rule(k, Risk::Critical, &cfg()),
            Rule::Approve { approvals: 2 }
        );
    }

    #[test]
    fn unattended_medium_waits_for_an_approval() {
        let c = PolicyConfig {
            unattended: true,
            ..cfg()
        };
        assert_eq!(
            rule("kubernetes.rollout_restart", Risk::Medium, &c),
            Rule::Approve { approvals: 1 }
        );
        assert_eq!(rule("kubernetes.pods", Risk::Low, &c), Rule::Run);
    }

    #[test]
    fn read_only_refuses_mutations_of_any_risk() {
        let c = PolicyConfig {
            read_only: true,
            ..cfg()
        };
        for risk in [Risk::Low, Risk::Medium, Risk::High, Risk::Critical] {
            assert!(matches!(
                rule("kubernetes.scale", risk, &c),
                Rule::Refuse { .. }
            ));
        }
    }

    #[test]
    fn diagnosis_only_never_runs_anything() {
        let c = PolicyConfig {
            diagnosis_only: true,
            ..cfg()
        };
        assert!(matches!(
            rule("alertmanager.silence", Risk::Low, &c),
            Rule::Refuse { .. }
        ));
    }

    #[test]
    fn the_same_operator_twice_is_one_approval() {
        assert!(!satisfied(Risk::Critical, &["alice", "alice"]));
        assert!(satisfied(Risk::Critical, &["alice", "bob"]));
        assert!(satisfied(Risk::High, &["alice"]));
        assert!(!satisfied(Risk::High, &[""]));
        assert!(satisfied::<&str>(Risk::Medium, &[]));
    }

    #[test]
    fn unknown_kinds_are_refused_in_read_only_mode() {
        let c = PolicyConfig {
            read_only: true,
            ..cfg()
        };
        assert!(matches!(
            rule("something.new", Risk::Low, &c),
            Rule::Refuse { .. }
        ));
        assert_eq!(rule("kubernetes.pods", Risk::Low, &c), Rule::Run);
    }

    #[test]
    fn a_declared_risk_below_the_floor_gets_the_floor_rule() {
        assert_eq!(
            rule("kubernetes.delete_pod", Risk::Low, &cfg()),
            Rule::Approve { approvals: 1 }
        );
        assert_eq!(
            rule("alertmanager.silence", Risk::Low, &cfg()),
            Rule::Veto { secs: 30.0 }
        );
        assert_eq!(
            rule("something.new", Risk::Low, &cfg()),
            Rule::Approve { approvals: 2 }
        );
    }
}
