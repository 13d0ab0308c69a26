//! The socket of a served connection as hyper sees it: where the
//! connection is in its request cycle (for the timeouts), and the one
//! rewrite of hyper's output — its bare refusals become problems.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use hyper::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::ServeConfig;
use crate::adapter::http::error::ApiError;

/// What happens when a connection's deadline passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expiry {
    /// Part of a head arrived, not all of it: a 408 problem, then close.
    Head,
    /// Nothing arrived (a new connection, or a kept-alive one between
    /// requests), or a request ran too long: close.
    Close,
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// Waiting for a request head since `since`; `first_byte` once part of
    /// it arrived; `fresh` before the connection's first request.
    Waiting {
        since: Instant,
        first_byte: Option<Instant>,
        fresh: bool,
    },
    /// A request is being served (its head arrived at `since`): body,
    /// handler, response.
    Busy { since: Instant },
}

/// Where a connection is in its request cycle, shared by its socket (bytes
/// read), its service (a head arrived, a response ended) and its driver
/// (which sleeps until [`Phase::deadline`] and wakes on
/// [`Phase::changed`]).
pub(super) struct Phase {
    state: Mutex<State>,
    changed: Notify,
}

impl Phase {
    pub(super) fn new() -> Self {
        Phase {
            state: Mutex::new(State::Waiting {
                since: Instant::now(),
                first_byte: None,
                fresh: true,
            }),
            changed: Notify::new(),
        }
    }

    fn update(&self, f: impl FnOnce(&mut State) -> bool) {
        let changed = f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner));
        if changed {
            self.changed.notify_one();
        }
    }

    fn get(&self) -> State {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes arrived from the client.
    fn bytes_read(&self) {
        self.update(|state| match state {
            State::Waiting { first_byte, .. } if first_byte.is_none() => {
                *first_byte = Some(Instant::now());
                true
            }
            _ => false,
        });
    }

    /// A request head arrived whole.
    pub(super) fn request_started(&self) {
        self.update(|state| {
            *state = State::Busy {
                since: Instant::now(),
            };
            true
        });
    }

    /// The response of the current request is done.
    pub(super) fn request_done(&self) {
        self.update(|state| {
            *state = State::Waiting {
                since: Instant::now(),
                first_byte: None,
                fresh: false,
            };
            true
        });
    }

    /// Whether no request is being served.
    fn waiting(&self) -> bool {
        matches!(self.get(), State::Waiting { .. })
    }

    /// When the connection's current bound runs out, and what then.
    pub(super) fn deadline(&self, config: &ServeConfig) -> (Instant, Expiry) {
        match self.get() {
            State::Waiting {
                first_byte: Some(first),
                ..
            } => (first + config.header_read_timeout, Expiry::Head),
            State::Waiting {
                since, fresh: true, ..
            } => (since + config.header_read_timeout, Expiry::Close),
            State::Waiting {
                since,
                fresh: false,
                ..
            } => (since + config.idle_timeout, Expiry::Close),
            State::Busy { since } => (since + config.request_timeout, Expiry::Close),
        }
    }

    /// Completes when the phase changes (or changed since the last call).
    pub(super) async fn changed(&self) {
        self.changed.notified().await;
    }
}

/// A complete HTTP/1.1 response carrying the problem of `status`
/// ([`ApiError::http_layer`]), closing the connection.
pub(super) fn problem_response(status: StatusCode) -> Vec<u8> {
    let problem = ApiError::http_layer(status).problem();
    let body = serde_json::to_vec(&problem).unwrap_or_default();
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {}\r\ncontent-length: {}\r\nconnection: close\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("Error"),
        crate::adapter::http::PROBLEM_JSON,
        body.len()
    );
    if status == StatusCode::SERVICE_UNAVAILABLE {
        out.push_str("retry-after: 1\r\n");
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(&body);
    out
}

/// The status of a response hyper wrote by itself to refuse a request it
/// could not parse — a 4xx head without a `Content-Type` (the router's
/// error responses always have one) — or `None`.
fn hyper_refusal(bytes: &[u8]) -> Option<StatusCode> {
    let rest = bytes
        .strip_prefix(b"HTTP/1.1 ")
        .or_else(|| bytes.strip_prefix(b"HTTP/1.0 "))?;
    let status = StatusCode::from_bytes(rest.get(..3)?).ok()?;
    if !status.is_client_error() {
        return None;
    }
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
    (!head.contains("\r\ncontent-type:")).then_some(status)
}

/// The client's socket, shared with the connection's driver (which writes
/// a 408 problem itself when a head times out, after hyper is gone).
pub(super) struct Io {
    stream: Arc<TcpStream>,
    phase: Arc<Phase>,
    /// A problem response written in place of hyper's bare refusal: the
    /// bytes, how many are written, and the length hyper asked to write.
    rewrite: Option<(Vec<u8>, usize, usize)>,
}

impl Io {
    pub(super) fn new(stream: Arc<TcpStream>, phase: Arc<Phase>) -> Self {
        Io {
            stream,
            phase,
            rewrite: None,
        }
    }

    /// Writes the pending rewrite; `Ready(Ok(n))` reports hyper's `n`
    /// bytes written once all of it is.
    fn poll_rewrite(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some((bytes, written, reported)) = &mut self.rewrite else {
            return Poll::Ready(Ok(0));
        };
        while *written < bytes.len() {
            match self.stream.poll_write_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            match self.stream.try_write(&bytes[*written..]) {
                Ok(n) => *written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        let reported = *reported;
        self.rewrite = None;
        Poll::Ready(Ok(reported))
    }
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            match this.stream.poll_read_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            match this.stream.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    if n > 0 {
                        this.phase.bytes_read();
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.rewrite.is_none() && this.phase.waiting() {
            if let Some(status) = hyper_refusal(buf) {
                this.rewrite = Some((problem_response(status), 0, buf.len()));
            }
        }
        if this.rewrite.is_some() {
            return this.poll_rewrite(cx);
        }
        loop {
            match this.stream.poll_write_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            match this.stream.try_write(buf) {
                Ok(n) => return Poll::Ready(Ok(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// The socket closes when the connection's last handle to it goes
    /// (hyper's and the driver's), right after hyper shuts down.
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyper_refusals_are_recognised_and_nothing_else() {
        let bare =
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(
            hyper_refusal(bare),
            Some(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE)
        );
        assert_eq!(
            hyper_refusal(b"HTTP/1.1 400 Bad Request\r\n\r\n"),
            Some(StatusCode::BAD_REQUEST)
        );
        for not in [
            &b"HTTP/1.1 404 Not Found\r\ncontent-type: application/problem+json\r\n\r\n{}"[..],
            b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 503 Service Unavailable\r\n\r\n",
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-le",
            b"{\"HTTP/1.1 400\": 1}",
        ] {
            assert_eq!(hyper_refusal(not), None, "{}", String::from_utf8_lossy(not));
        }
    }

    #[test]
    fn a_problem_response_is_whole_http() {
        let bytes = problem_response(StatusCode::URI_TOO_LONG);
        let text = String::from_utf8(bytes).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{head}");
        assert!(head.contains("content-type: application/problem+json"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let problem: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(problem["status"], 414);
        assert_eq!(problem["code"], "uri_too_long");
    }
}
