//! The listening socket, the bounded worker pool, and turning a page's result into an HTTP
//! answer (headers that keep a browser from running anything but our own script).

use crate::error::ServeError;
use crate::options::{Deadline, Options};
use crate::pages::{self, Ctx, Reply};
use crate::route;
use std::io::Read;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use stele::{Database, ReadOnlyDatabase};
use tiny_http::{Header, Method, Request, Response, StatusCode};

/// What every worker shares.
#[derive(Debug)]
pub(crate) struct App {
    pub db: ReadOnlyDatabase,
    pub opts: Options,
    /// The collections' schema summaries, kept between requests (`pages::schema`).
    schemas: crate::pages::schema::SchemaCache,
    /// Why the server stopped by itself: tiny_http's accept loop ends at its first accept
    /// error (too many open files, say), after which no connection would be taken.
    failure: std::sync::Mutex<Option<String>>,
}

/// A running server. Stops (and joins its workers) on [`stop`](Self::stop) or drop.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    warning: Option<String>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
    app: Arc<App>,
}

/// How long a worker waits for a request before it looks at the stop flag again.
const POLL: Duration = Duration::from_millis(100);

impl Server {
    /// Opens the database in `dir` read-only and starts answering on `opts.host:opts.port`.
    pub fn start(dir: impl AsRef<Path>, opts: Options) -> Result<Server, ServeError> {
        let db = Database::open_read_only(dir.as_ref())?;
        let wanted = format!("{}:{}", opts.host, opts.port);
        let bind_err = |reason: String| ServeError::Bind {
            addr: wanted.clone(),
            reason,
        };
        let addr = wanted
            .to_socket_addrs()
            .map_err(|e| bind_err(e.to_string()))?
            .next()
            .ok_or_else(|| bind_err("the host names no address".into()))?;
        let listener = std::net::TcpListener::bind(addr).map_err(|e| bind_err(e.to_string()))?;
        no_delay(&listener);
        let http = tiny_http::Server::from_listener(listener, None)
            .map_err(|e| bind_err(e.to_string()))?;
        let addr = http
            .server_addr()
            .to_ip()
            .ok_or_else(|| bind_err("not an IP address".into()))?;
        let warning = (!addr.ip().is_loopback()).then(|| {
            format!(
                "warning: listening on {} is reachable from other machines; every document of the database can be read by anyone who reaches this port (there is no login). Use --host 127.0.0.1 to keep it to this machine.",
                addr.ip()
            )
        });
        let http = Arc::new(http);
        let stop = Arc::new(AtomicBool::new(false));
        let app = Arc::new(App {
            db,
            opts: opts.clone(),
            schemas: Default::default(),
            failure: std::sync::Mutex::new(None),
        });
        let mut workers = (0..opts.workers.max(1))
            .map(|i| {
                let (http, stop, app) = (http.clone(), stop.clone(), app.clone());
                std::thread::Builder::new()
                    .name(format!("stele-serve-{i}"))
                    .spawn(move || work(&http, &stop, &app))
                    .map_err(|e| bind_err(format!("cannot start a worker thread: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if opts.kick_connections {
            workers.push(
                crate::kick::start(addr, stop.clone())
                    .map_err(|e| bind_err(format!("cannot start a thread: {e}")))?,
            );
        }
        Ok(Server {
            addr,
            warning,
            stop,
            workers,
            app,
        })
    }

    /// The address listened on (the port chosen, when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL of the database page.
    pub fn url(&self) -> String {
        match self.addr.ip() {
            IpAddr::V6(ip) => format!("http://[{ip}]:{}/", self.addr.port()),
            IpAddr::V4(ip) => format!("http://{ip}:{}/", self.addr.port()),
        }
    }

    /// A warning to print when the address is reachable from other machines.
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// Why the server stopped by itself, if it did (its listening socket failed: it takes
    /// no more connections).
    pub fn failure(&self) -> Option<String> {
        self.app.failure.lock().ok().and_then(|f| f.clone())
    }

    /// Answers until `stop` becomes true (a Ctrl-C handler sets it), then stops. Fails with
    /// [`ServeError::Listener`] if the server stopped by itself first.
    pub fn run_until(self, stop: &AtomicBool) -> Result<(), ServeError> {
        while !stop.load(Ordering::Relaxed) && !self.stop.load(Ordering::Relaxed) {
            std::thread::sleep(POLL);
        }
        let failure = self.failure();
        self.stop();
        match failure {
            Some(reason) => Err(ServeError::Listener { reason }),
            None => Ok(()),
        }
    }

    /// Stops: the workers finish the request they answer and end.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for w in self.workers.drain(..) {
            // A worker that panicked has nothing more to clean up.
            let _ = w.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Sets TCP_NODELAY on the listening socket, which Linux passes on to the connections it
/// accepts. tiny_http writes an answer's headers and body in several writes; with Nagle's
/// algorithm on, the second waits for the client's delayed acknowledgement (40 ms) before
/// it leaves, whatever the page's cost. Best effort: without it pages are only slower.
fn no_delay(listener: &std::net::TcpListener) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: the descriptor is the listener's, open for the duration of the call; the
    // option value points to a live c_int whose size is passed along.
    unsafe {
        libc::setsockopt(
            listener.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&raw const on).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

fn work(http: &tiny_http::Server, stop: &AtomicBool, app: &App) {
    while !stop.load(Ordering::Relaxed) {
        match http.recv_timeout(POLL) {
            Ok(Some(req)) => answer(app, req),
            Ok(None) => {}
            // The accept loop ended: nothing more will come. Stop every worker and say why.
            Err(e) => {
                if let Ok(mut f) = app.failure.lock() {
                    f.get_or_insert_with(|| e.to_string());
                }
                stop.store(true, Ordering::Relaxed);
                return;
            }
        }
    }
}

fn answer(app: &App, mut req: Request) {
    let head = *req.method() == Method::Head;
    let accepts_json = req.headers().iter().any(|h| {
        h.field.equiv("Accept")
            && h.value.as_str().contains("application/json")
            && !h.value.as_str().contains("text/html")
    });
    let format = route::format_of(req.url(), accepts_json);
    let reply = check_request(&mut req).and_then(|()| {
        let parsed = route::parse(req.url(), accepts_json)?;
        // New commits of the writer show on the next request.
        app.db.refresh()?;
        let ctx = Ctx {
            snap: app.db.snapshot(),
            dir: app.db.dir(),
            opts: &app.opts,
            deadline: Deadline::new(app.opts.time_limit),
            req: parsed,
            schemas: &app.schemas,
        };
        pages::dispatch(&ctx)
    });
    let reply = reply.unwrap_or_else(|e| pages::error_page(&e, format));
    let (status, content_type, body) = match reply {
        Reply::Html(status, s) => (status, "text/html; charset=utf-8", Body::Text(s)),
        Reply::Json(status, s) => (status, "application/json", Body::Text(s)),
        Reply::Asset(ct, s) => (200, ct, Body::Static(s)),
        Reply::Stream(ct, reader) => (200, ct, Body::Stream(reader)),
    };
    // A body of known length goes with a Content-Length (one write with the headers); a
    // stream goes chunked.
    let (reader, length): (Box<dyn Read + Send>, Option<usize>) = match body {
        _ if head => (Box::new(std::io::empty()), Some(0)),
        Body::Text(s) => {
            let n = s.len();
            (Box::new(std::io::Cursor::new(s.into_bytes())), Some(n))
        }
        Body::Static(s) => (Box::new(s.as_bytes()), Some(s.len())),
        Body::Stream(r) => (r, None),
    };
    let mut resp = Response::new(StatusCode(status), Vec::new(), reader, length, None);
    push(&mut resp, "Content-Type", content_type);
    // Defence in depth behind the escaping: only our own script and stylesheet may run.
    push(
        &mut resp,
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
    push(&mut resp, "X-Content-Type-Options", "nosniff");
    push(&mut resp, "Referrer-Policy", "no-referrer");
    push(&mut resp, "Cache-Control", "no-store");
    // The client may have gone away; nothing to do about it.
    let _ = req.respond(resp);
}

enum Body {
    Text(String),
    Static(&'static str),
    Stream(Box<dyn Read + Send>),
}

fn push<R: Read>(resp: &mut Response<R>, name: &str, value: &str) {
    if let Ok(h) = Header::from_bytes(name.as_bytes(), value.as_bytes()) {
        resp.add_header(h);
    }
}

/// Only GET and HEAD, without a body: the server never writes and takes no uploads.
fn check_request(req: &mut Request) -> Result<(), ServeError> {
    match req.method() {
        Method::Get | Method::Head => {}
        m => {
            return Err(ServeError::Method {
                method: m.as_str().to_owned(),
            });
        }
    }
    match req.body_length() {
        Some(0) | None if !has_chunked_body(req) => Ok(()),
        n => Err(ServeError::TooLarge {
            what: "body",
            bytes: n.unwrap_or(0),
            limit: 0,
        }),
    }
}

fn has_chunked_body(req: &Request) -> bool {
    req.headers()
        .iter()
        .any(|h| h.field.equiv("Transfer-Encoding") && !h.value.as_str().is_empty())
}
