//! sitrep: a terminal incident console. The library holds every layer so tests and benches reach them.

pub mod agent;
pub mod cli;
pub mod config;
pub mod doctor;
pub mod eval;
pub mod inbox;
pub mod integrations;
pub mod model;
pub mod notify;
pub mod policy;
pub mod reason;
pub mod runbook;
pub mod secrets;
pub mod serve;
pub mod session;
pub mod tui;
pub mod world;
