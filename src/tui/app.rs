//! The console's public face for the event loop, tests and benches: state, messages, reducer.

pub use super::approval_state::{APPROVAL_GUARD, ApprovalStage, ApprovalUi, target_name};
pub use super::index::{Index, LineIndex};
pub use super::palette_state::{PaletteState, palette_candidates, run_command};
pub use super::reducer::{chat_command, update};
pub use super::replay_state::ReplayUi;
pub use super::scroll::Scroll;
pub use super::search::{Filter, contains_ci};
pub use super::state::{AppState, Effect, Msg, Overlay, Pane, Status, row_kind};
