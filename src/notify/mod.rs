//! Notifications about the investigations `sitrep serve` runs, sent to chat (Slack) off the investigation's path.

pub mod slack;

pub use slack::{Interaction, Slack, Watch};
