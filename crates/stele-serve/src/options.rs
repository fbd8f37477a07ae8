//! How a server runs ([`Options`]) and a request's time budget ([`Deadline`]): what the
//! pages and the server both read, below both.

use crate::error::ServeError;
use std::time::{Duration, Instant};

/// How the server runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// Address to listen on; `127.0.0.1` by default. Any other address is reachable from
    /// other machines: [`Server::warning`] says so.
    pub host: String,
    /// Port; `8080` by default, `0` for any free port.
    pub port: u16,
    /// Worker threads: at most this many requests are answered at once; the others wait
    /// in the socket's queue. 4 by default.
    pub workers: usize,
    /// Time budget of one request (a query, a page of documents, a facet); 1 s by default,
    /// as Datasette. Past it the work stops and the answer (503) says so. Streamed exports
    /// read the collection in chunks, each within the budget.
    pub time_limit: Duration,
    /// Documents on a collection page; 50 by default (`?limit=` up to 1000).
    pub page_size: usize,
    /// Opens and closes a loopback connection every 10 ms so that no connection waits for
    /// a thread of tiny_http's pool (see `kick.rs`); on by default. Off only to measure
    /// what it prevents.
    pub kick_connections: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            host: "127.0.0.1".into(),
            port: 8080,
            workers: 4,
            time_limit: Duration::from_secs(1),
            page_size: 50,
            kick_connections: true,
        }
    }
}

impl Options {
    /// Sets [`host`](Self::host).
    pub fn host(mut self, host: &str) -> Self {
        host.clone_into(&mut self.host);
        self
    }
    /// Sets [`port`](Self::port).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }
    /// Sets [`workers`](Self::workers) (at least 1).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }
    /// Sets [`kick_connections`](Self::kick_connections).
    pub fn kick_connections(mut self, on: bool) -> Self {
        self.kick_connections = on;
        self
    }
    /// Sets [`time_limit`](Self::time_limit).
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }
}

/// A request's time budget.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    start: Instant,
    budget: Duration,
}

impl Deadline {
    pub fn new(budget: Duration) -> Deadline {
        Deadline {
            start: Instant::now(),
            budget,
        }
    }

    /// Fails once the budget is spent.
    pub fn check(&self) -> Result<(), ServeError> {
        let elapsed = self.start.elapsed();
        if elapsed > self.budget {
            return Err(ServeError::TimeBudget {
                elapsed_ms: elapsed.as_millis() as u64,
                budget_ms: self.budget.as_millis() as u64,
            });
        }
        Ok(())
    }

    /// What is left of the budget (at least 1 ms, so a query given it starts and stops).
    pub fn remaining(&self) -> Duration {
        self.budget
            .saturating_sub(self.start.elapsed())
            .max(Duration::from_millis(1))
    }

    /// The whole budget.
    pub fn budget(&self) -> Duration {
        self.budget
    }
}
