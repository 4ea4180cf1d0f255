//! What a run talks to: the live world built from config, or a recorded case directory.
