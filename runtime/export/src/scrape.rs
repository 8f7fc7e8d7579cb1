//! What a server asks of a running script, and what it gets back. The server's threads
//! send [`Scrape`]s over a channel; the run loop that owns the maps answers each between two
//! batches of events (so maps are read where they live, by the thread that reads them
//! anyway), and the server encodes nothing itself but what needs no map (a delta of two
//! dumps).

use crate::metrics::Format;
use sonde_present::output::MapDump;
use std::sync::mpsc;

/// What is asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Every map as metrics, in this format.
    Metrics(Format),
    /// Every map as JSON.
    Maps,
    /// One map, decoded (for a profile).
    Dump(String),
}

/// An answer.
#[derive(Debug)]
pub enum Reply {
    /// An encoded body and its content type.
    Body {
        /// The `Content-Type`.
        content_type: &'static str,
        /// The body.
        body: Vec<u8>,
    },
    /// A decoded map, for a profile.
    Dump {
        /// The map.
        dump: MapDump,
        /// The names of its key expressions (labels of the profile's samples).
        key_names: Vec<String>,
        /// The frequency of the script's `profile:hz:N` probe (0 without one).
        frequency_hz: u64,
    },
}

/// A request and where its answer goes.
#[derive(Debug)]
pub struct Scrape {
    /// What is asked.
    pub request: Request,
    /// Where the answer (or the error's text) goes.
    pub reply: mpsc::Sender<Result<Reply, String>>,
}

/// The run loop's end of the channel.
pub type Scrapes = mpsc::Receiver<Scrape>;
