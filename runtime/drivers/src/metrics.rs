//! A run's maps exported while it runs (`--metrics`, `--metrics-file`): the exporter the
//! session keeps, the HTTP server whose scrapes the run loop answers, and the textfile
//! written every interval. Both engines' run loops call it at each tick, as a
//! [`Served`].

use sonde_agent::{MetricsServer, Textfile};
use sonde_export::metrics::{ExportOptions, Exporter, Format, RunStats};
use sonde_export::scrape::{Reply, Request, Scrape, Scrapes};
use sonde_present::output::MapSource;
use sonde_session::Output;
use sonde_session::scrape::Served;
use std::sync::mpsc;

/// What a run exports and where.
pub struct MetricsRun {
    exporter: Option<Exporter>,
    server: Option<(MetricsServer, Scrapes)>,
    textfile: Option<Textfile>,
    push: Option<crate::push_folded::FoldedPush>,
}

impl std::fmt::Debug for MetricsRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsRun")
            .field("server", &self.server.as_ref().map(|(s, _)| s.addr()))
            .field("textfile", &self.textfile)
            .finish()
    }
}

impl MetricsRun {
    /// Starts what `listen`, `textfile` and `push` ask for (each may be absent): the server
    /// is listening when this returns, so a port in use is an error before anything is
    /// traced.
    pub fn start(
        opts: ExportOptions,
        listen: Option<&str>,
        textfile: Option<Textfile>,
        push: Option<crate::push_folded::FoldedPush>,
    ) -> Result<MetricsRun, String> {
        let server = match listen {
            Some(addr) => {
                let (tx, rx) = mpsc::channel::<Scrape>();
                Some((MetricsServer::start(addr, tx)?, rx))
            }
            None => None,
        };
        Ok(MetricsRun {
            exporter: Some(Exporter::new(opts)),
            server,
            textfile,
            push,
        })
    }

    /// Where the server listens, if there is one.
    pub fn addr(&self) -> Option<std::net::SocketAddr> {
        self.server.as_ref().map(|(s, _)| s.addr())
    }

    /// Answers the scrapes waiting and writes the textfile if it is due.
    fn answer(&mut self, out: &mut Output<'_>, maps: &dyn MapSource, stats: RunStats) {
        if let Some((_, scrapes)) = &self.server {
            out.answer_scrapes(scrapes, maps, stats);
        }
        if self.textfile.as_ref().is_some_and(Textfile::due) {
            self.write_textfile(out, maps, stats);
        }
    }

    /// Writes the metrics to the textfile now.
    fn write_textfile(&mut self, out: &mut Output<'_>, maps: &dyn MapSource, stats: RunStats) {
        let Some(t) = self.textfile.as_mut() else {
            return;
        };
        let written = match out.answer(&Request::Metrics(Format::Text), maps, stats) {
            Ok(Reply::Body { body, .. }) => t.write(&body),
            Ok(Reply::Dump { .. }) => Ok(()),
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            sonde_system::warnings::warn(&format!("--metrics-file: {e}"));
        }
    }
}

impl Served for MetricsRun {
    fn attach(&mut self, out: &mut Output<'_>) {
        if let Some(e) = self.exporter.take() {
            out.set_metrics(e);
        }
    }

    fn serve(&mut self, out: &mut Output<'_>, maps: &dyn MapSource, stats: RunStats, last: bool) {
        let mut stats = stats;
        if let Some(p) = self.push.as_mut() {
            p.tick(out, maps, last);
            stats.pushes_dropped = p.dropped();
        }
        if !last {
            self.answer(out, maps, stats);
        } else if self.textfile.is_some() {
            // The run ends: the textfile gets the final values.
            self.write_textfile(out, maps, stats);
        }
    }
}
