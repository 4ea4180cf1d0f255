//! Session files: append-only NDJSON writer, tolerant streaming reader, replay clock and keyframes.
