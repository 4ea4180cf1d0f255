//! Configuration: config.toml from the config dir (SITREP_CONFIG overrides), with strict validation.
