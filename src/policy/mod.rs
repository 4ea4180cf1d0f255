//! Deterministic policy: approval rules per risk, read-only mode, and redaction of secrets.
