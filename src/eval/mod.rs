//! Scores finished sessions against a case's expect.toml.
