//! Serving a router over TCP so that hostile or broken clients cannot hold
//! the server: [`serve`], the HTTP/1.1 accept loop of `accord serve`.
//!
//! `axum::serve` bounds nothing: a client that sends half a request head
//! keeps its connection (and a file descriptor) for as long as it likes,
//! and enough of them stop the server from accepting anyone. [`serve`]
//! runs hyper's HTTP/1.1 connection itself, with these defences
//! ([`ServeConfig`], defaults in brackets):
//!
//! | Defence | Default | Past it |
//! |---|---|---|
//! | request head read timeout, from a connection's opening or a head's first byte | 10 s | 408 problem (a head begun) or close (nothing sent), connection closed |
//! | body read timeout, from the end of the head | 30 s | 408 problem `body_timeout`, connection closed |
//! | idle keep-alive timeout, between requests | 60 s | connection closed |
//! | request timeout, head to end of response | 60 s | connection closed |
//! | open connections | 4,096 | the newest is answered 503 problem and closed |
//! | request head size | [`MAX_HEAD_BYTES`], [`MAX_HEADERS`] fields | 431 problem |
//!
//! Where hyper refuses a request itself (a head that is not HTTP: 400; a
//! head too large: 431; a target too long: 414) it answers with a bare
//! status line; [`serve`] rewrites those answers as problem+json of the
//! same status (`malformed_request`, `header_fields_too_large`,
//! `uri_too_long`). Targets longer than [`MAX_URI_BYTES`] are refused by
//! the router itself (414 problem), so embedders serving it another way get
//! that one too.
//!
//! The connection cap refuses rather than falls over: a refused client
//! gets a 503 at once (when its socket takes it) instead of a server that
//! has run out of file descriptors. Accept errors (such as the process's
//! descriptor limit) pause the loop briefly instead of spinning.
//!
//! Writes are never cut by a connection closing: the stores finish them
//! whatever happens to the request (see `crate::store`).
//!
//! HTTP/1.1 only (put a proxy in front for HTTP/2 or TLS).

mod body;
mod io;

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tower::ServiceExt as _;

pub(crate) use body::BodyTimeout;
use body::{DoneBody, TimedBody};
use io::{Expiry, Io, Phase};

use super::{MAX_HEADERS, MAX_HEAD_BYTES};

/// Longest request target (path and query), in bytes; longer is a 414
/// problem (checked by the router, see [`super::router`]).
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// How long a refusal or a 408 may take to write before the connection is
/// simply closed.
const PARTING_WRITE: Duration = Duration::from_secs(1);

/// How long the accept loop pauses after an accept error (out of file
/// descriptors, say) before it tries again.
const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// The bounds of [`serve`]. Build it from [`Default`] and change fields:
///
/// ```
/// let mut config = accord::http::ServeConfig::default();
/// config.max_connections = 10_000;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeConfig {
    /// Longest a client may take to send a request head: from the
    /// connection's opening for its first request, from the head's first
    /// byte for later ones. Past it, a 408 problem if part of a head
    /// arrived (the connection closes either way). Default 10 s.
    pub header_read_timeout: Duration,
    /// Longest a client may take to send a request body, from the end of
    /// its head. Past it the body read fails: a 408 problem
    /// `body_timeout`, and the connection closes. Default 30 s.
    pub body_read_timeout: Duration,
    /// Longest a kept-alive connection may wait between requests before it
    /// is closed. Default 60 s; put a balancer's idle timeout below it.
    pub idle_timeout: Duration,
    /// Longest one request may take, from its head to the end of its
    /// response (a client that does not read its response, say); then
    /// the connection is closed. Default 60 s.
    pub request_timeout: Duration,
    /// Most connections open at once. The newest connection past it is
    /// answered a 503 problem and closed. Default 4,096: keep it below the
    /// process's file-descriptor limit (`ulimit -n`), with room for the
    /// database's connections.
    pub max_connections: usize,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(60),
            max_connections: 4096,
        }
    }
}

/// Serves `app` on `listener` with the bounds of `config` until `shutdown`
/// completes; then stops accepting, lets the requests in flight finish
/// (each within [`ServeConfig::request_timeout`]), closes idle
/// connections, and returns.
///
/// ```no_run
/// # async fn run(app: axum::Router) -> std::io::Result<()> {
/// use accord::http::{serve, ServeConfig};
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// serve(listener, app, ServeConfig::default(), async {
///     let _ = tokio::signal::ctrl_c().await;
/// })
/// .await
/// # }
/// ```
pub async fn serve(
    listener: TcpListener,
    app: Router,
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let config = Arc::new(config);
    let permits = Arc::new(Semaphore::new(config.max_connections));
    let (stop, stopped) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    // Refusals are logged at most once a second, with their count: a flood
    // over the cap must not flood the log too.
    let (mut refused, mut last_warned) = (0u64, None::<Instant>);
    loop {
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, or a connection that died in the
                    // backlog: pause rather than spin, then go on.
                    tracing::warn!(target: "accord::http", error = %e, "accept failed");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                    continue;
                }
            },
        };
        let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
            refuse(&stream);
            refused += 1;
            if last_warned.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
                tracing::warn!(
                    target: "accord::http",
                    refused,
                    max_connections = config.max_connections,
                    "connections refused: too many open connections"
                );
                (refused, last_warned) = (0, Some(Instant::now()));
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(
            stream,
            app.clone(),
            Arc::clone(&config),
            stopped.clone(),
            permit,
        ));
    }
    drop(listener);
    let _ = stop.send(true);
    // Every connection holds a permit until it ends.
    let all = u32::try_from(config.max_connections).unwrap_or(u32::MAX);
    let _ = permits.acquire_many(all).await;
    Ok(())
}

/// Answers a connection over the cap with a 503 problem if its socket
/// takes the bytes at once (it does, on a new connection), without
/// waiting: a flood of connections over the cap must not hold a
/// descriptor each while it is answered. The caller closes it.
fn refuse(stream: &TcpStream) {
    let response = io::problem_response(hyper::StatusCode::SERVICE_UNAVAILABLE);
    let _ = stream.try_write(&response);
}

/// Writes `bytes` to `stream`, [`PARTING_WRITE`] at most.
async fn write_parting(stream: &TcpStream, bytes: &[u8]) {
    let write = async {
        let mut written = 0;
        while written < bytes.len() {
            stream.writable().await?;
            match stream.try_write(&bytes[written..]) {
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        Ok::<(), std::io::Error>(())
    };
    let _ = tokio::time::timeout(PARTING_WRITE, write).await;
}

/// One connection: hyper's HTTP/1.1 state machine, watched by the timeouts
/// of `config` (see [`Phase`]) and by the server's shutdown.
async fn connection(
    stream: TcpStream,
    app: Router,
    config: Arc<ServeConfig>,
    mut stopped: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
) {
    let stream = Arc::new(stream);
    let phase = Arc::new(Phase::new());
    let service = {
        let (phase, config) = (Arc::clone(&phase), Arc::clone(&config));
        hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            phase.request_started();
            let body_deadline = Instant::now() + config.body_read_timeout;
            let (app, phase) = (app.clone(), Arc::clone(&phase));
            async move {
                let req = req.map(|b| axum::body::Body::new(TimedBody::new(b, body_deadline)));
                let Ok(res) = app.oneshot(req).await;
                Ok::<_, Infallible>(res.map(|b| DoneBody::new(b, phase)))
            }
        })
    };
    let io = TokioIo::new(Io::new(Arc::clone(&stream), Arc::clone(&phase)));
    let conn = http1::Builder::new()
        .keep_alive(true)
        .max_buf_size(MAX_HEAD_BYTES)
        .max_header_size(MAX_HEAD_BYTES)
        .max_headers(MAX_HEADERS)
        // The timeouts are ours (see `Phase`): hyper's header timeout
        // would also close idle kept-alive connections, and answer nothing.
        .header_read_timeout(None)
        .serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    let mut stopping = false;
    loop {
        let (deadline, expiry) = phase.deadline(&config);
        tokio::select! {
            _ = conn.as_mut() => break,
            () = phase.changed() => {}
            () = tokio::time::sleep_until(deadline) => {
                // The phase may have moved on since the deadline was read.
                if phase.deadline(&config).0 > Instant::now() {
                    continue;
                }
                if expiry == Expiry::Head {
                    let response = io::problem_response(hyper::StatusCode::REQUEST_TIMEOUT);
                    write_parting(&stream, &response).await;
                }
                break;
            }
            _ = stopped.changed(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}
