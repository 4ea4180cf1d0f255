//! Deterministic reasoning: analyzers that turn observations into findings, and their ranking.
