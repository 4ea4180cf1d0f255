//! The console's view of the shared terminal-text sanitizer (`model::text`).

pub use crate::model::text::{sanitize, sanitize_multiline, sanitize_prefix};
