//! Request and response bodies of a served connection: a request body that
//! fails once its time is up, and a response body that tells the
//! connection when its request is over.

use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Bytes;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use tokio::time::{Instant, Sleep};

use super::io::Phase;

/// The error of a request body that did not arrive before its deadline;
/// the JSON extractor answers it with a 408 problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyTimeout;

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive in time")
    }
}

impl std::error::Error for BodyTimeout {}

impl BodyTimeout {
    /// Whether `error`, or an error it wraps, is a [`BodyTimeout`].
    pub(crate) fn caused(error: &(dyn std::error::Error + 'static)) -> bool {
        let mut next = Some(error);
        while let Some(e) = next {
            if e.is::<BodyTimeout>() {
                return true;
            }
            next = e.source();
        }
        false
    }
}

/// A request body that must arrive whole before `deadline`.
pub(super) struct TimedBody {
    inner: Incoming,
    deadline: Pin<Box<Sleep>>,
}

impl TimedBody {
    pub(super) fn new(inner: Incoming, deadline: Instant) -> Self {
        TimedBody {
            inner,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
        }
    }
}

impl HttpBody for TimedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if this.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Box::new(BodyTimeout))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that marks its request over when hyper is done with it
/// (sent whole, or dropped with the connection).
pub(super) struct DoneBody {
    inner: axum::body::Body,
    phase: Arc<Phase>,
}

impl DoneBody {
    pub(super) fn new(inner: axum::body::Body, phase: Arc<Phase>) -> Self {
        DoneBody { inner, phase }
    }
}

impl Drop for DoneBody {
    fn drop(&mut self) {
        self.phase.request_done();
    }
}

impl HttpBody for DoneBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
