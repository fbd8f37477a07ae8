//! A work-around for a lost wake-up in tiny_http 0.12's connection thread pool.
//!
//! tiny_http runs each connection on a thread of its `TaskPool`. Its `spawn` queues a new
//! connection for an idle thread when its count of waiting threads is above zero, and
//! notifies one; but the waiting thread lowers that count only once it has woken. Two
//! connections accepted in that window (a browser opens several at once; so do 8 clients)
//! both see one waiting thread: the first wakes it, the second is queued with no thread to
//! notify, and waits until some connection thread finishes its connection. With keep-alive
//! clients that can be never: `serve_bench` saw requests wait the whole 20-30 s of a run.
//!
//! The kicker opens and closes a loopback connection every [`EVERY`]: each one is a new
//! task for the pool, which either starts a thread (that, once the empty connection ends,
//! takes the stranded one from the queue) or wakes a waiting thread that takes the queue's
//! first, stranded, task. A stranded connection so waits at most about [`EVERY`].
//!
//! Still needed (2026-12-01): 0.12.0 is tiny_http's newest release and its `task_pool.rs` is
//! unchanged upstream; the pool is fed by tiny_http's own accept thread, so no arrangement of
//! our accepts reaches it. The kick costs about 2 % of the server's CPU under `serve_bench`.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Time between two kicks.
pub const EVERY: Duration = Duration::from_millis(10);

/// Starts the kicker of the server listening on `addr`, until `stop`.
pub fn start(addr: SocketAddr, stop: Arc<AtomicBool>) -> io::Result<JoinHandle<()>> {
    let target = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), addr.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), addr.port())
        }
        _ => addr,
    };
    std::thread::Builder::new()
        .name("stele-serve-kick".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // Connected and closed at once; a failure (the server stopping) is harmless.
                drop(TcpStream::connect_timeout(&target, Duration::from_secs(1)));
                std::thread::sleep(EVERY);
            }
        })
}
