//! The terminal console: event loop, keymap, theme and one file per view.
