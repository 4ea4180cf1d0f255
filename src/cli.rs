//! Command-line interface: clap subcommands and their dispatch.
