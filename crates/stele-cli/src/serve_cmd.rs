//! `stele serve`: the database in a web page (crate `stele-serve`), until Ctrl-C.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele serve shop.db                       http://127.0.0.1:8080/
  stele serve shop.db --port 9000
  curl -s http://127.0.0.1:8080/c/orders.json?limit=5     each page has a JSON twin
  curl -s http://127.0.0.1:8080/c/orders.jsonl > all.jsonl  the whole collection, streamed

Read-only: the database is opened beside its writer, if one runs, and every request sees
what it committed. Listens on 127.0.0.1 unless --host says otherwise; there is no login,
so any other address lets every machine that reaches the port read every document.")]
pub struct ServeArgs {
    /// The database folder.
    db: PathBuf,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Address to listen on. Anything but a loopback address is reachable from other machines.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Requests answered at once (the others wait their turn).
    #[arg(long, default_value_t = 4, value_parser = crate::say::at_least_one())]
    workers: usize,
    /// Time budget of one request, in milliseconds; past it the work stops and the page says so.
    #[arg(long, default_value_t = 1000)]
    time_limit_ms: u64,
}

/// Set by SIGINT or SIGTERM.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // An atomic store is async-signal-safe; the main thread polls the flag.
    STOP.store(true, Ordering::Relaxed);
}

pub fn run(args: &ServeArgs) -> Result<()> {
    let opts = stele_serve::Options::default()
        .host(&args.host)
        .port(args.port)
        .workers(args.workers)
        .time_limit(Duration::from_millis(args.time_limit_ms));
    let server = stele_serve::Server::start(&args.db, opts)
        .with_context(|| format!("serving {}", args.db.display()))?;
    // SAFETY: `on_signal` only stores into an atomic, which is async-signal-safe; the
    // handler is installed once, and replaces the default action (end the process) so that
    // the workers finish their requests and the database's handles close in order.
    unsafe {
        let handler = on_signal as extern "C" fn(libc::c_int) as *const () as libc::sighandler_t;
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
    if let Some(w) = server.warning() {
        eprintln!("{w}");
    }
    println!(
        "serving {} at {} (read-only; Ctrl-C stops)",
        args.db.display(),
        server.url()
    );
    server.run_until(&STOP)?;
    eprintln!("stopped");
    Ok(())
}
