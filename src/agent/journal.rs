//! The journal: stamps each event with seconds since start, folds it, writes it and sends it on.

use super::observe::ObservationLog;
use crate::model::{Event, Incident, Record, SessionHeader};
use crate::session::Writer;
use std::io;
use std::path::Path;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Where records are persisted: the session file, or nowhere (tests, eval without a path).
pub enum Sink {
    None,
    File(Writer),
}

impl Sink {
    pub fn create(path: &Path, header: &SessionHeader) -> io::Result<Sink> {
        Ok(Sink::File(Writer::create(path, header)?))
    }

    fn append(&mut self, record: &Record) -> io::Result<()> {
        match self {
            Sink::None => Ok(()),
            Sink::File(w) => w.append(record),
        }
    }

    fn sync(&mut self) -> io::Result<()> {
        match self {
            Sink::None => Ok(()),
            Sink::File(w) => w.sync(),
        }
    }
}

/// Shared by every stage and specialist (behind a mutex; never held across an await).
pub struct Journal {
    start: Instant,
    sink: Sink,
    tx: mpsc::UnboundedSender<Record>,
    /// The fold of everything emitted so far, for chat answers and stage decisions.
    pub incident: Incident,
    /// The reasoning's inputs, folded from the same events: Diagnose reads them here, so a live
    /// verdict and `sitrep diagnose` on the saved file cannot drift apart.
    pub observations: ObservationLog,
    /// The first write error, reported once as a warning; the run goes on with the channel.
    write_failed: bool,
    next_id: u64,
}

impl Journal {
    pub fn new(sink: Sink, tx: mpsc::UnboundedSender<Record>) -> Journal {
        Journal {
            start: Instant::now(),
            sink,
            tx,
            incident: Incident::new(),
            observations: ObservationLog::new(),
            write_failed: false,
            next_id: 0,
        }
    }

    /// Seconds since the run started (tokio's clock, so paused-clock tests are exact).
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// A fresh id with `prefix`, unique within the session.
    pub fn next_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}-{}", self.next_id)
    }

    pub fn emit(&mut self, event: Event) {
        let t = (self.elapsed() * 1000.0).round() / 1000.0;
        self.incident.apply(t, &event);
        self.observations.apply(&event);
        let record = Record { t, event };
        if let Err(e) = self.sink.append(&record) {
            self.write_failure(e);
        }
        // A closed receiver means nobody watches (the UI quit); the run still completes.
        let _ = self.tx.send(record);
    }

    /// fsync the session file: decisions are durable before anything executes.
    pub fn sync(&mut self) -> io::Result<()> {
        self.sink.sync()
    }

    fn write_failure(&mut self, e: io::Error) {
        if self.write_failed {
            return;
        }
        self.write_failed = true;
        let t = self.elapsed();
        let event = Event::Warning {
            message: format!("session file write failed: {e}"),
        };
        self.incident.apply(t, &event);
        let _ = self.tx.send(Record { t, event });
    }
}
