//! The investigation pipeline: stages, parallel specialists, tools, executor and verification.
