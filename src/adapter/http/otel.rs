//! OpenTelemetry traces (feature `otel`): the spans Accord exports, and
//! the [`layer`] that hands them to an OpenTelemetry tracer.
//!
//! Spans: one per HTTP request (kind `server`, named `{method} {route
//! template}`, with `http.request.method`, `http.route`,
//! `http.response.status_code` and `accord.request_id`), and within it one
//! per campaign search and redeem (`campaign.search`, `campaign.redeem`,
//! with `accord.outcome`: the outcome the metrics count, `matched`,
//! `redeemed`, `quota_exceeded`, …). A request carrying a W3C
//! `traceparent` header continues the caller's trace. The attributes are
//! these and no other: never a raw path, a query, a body, a user id, a data
//! subject, a token or a client address.
//!
//! They are `trace`-level spans of target `accord::otel`: [`layer`]
//! exports them and nothing else (no other crate's spans, no log events),
//! and a log filter at `info` leaves them out of the logs. Without the
//! feature the functions here make disabled spans, at no cost.

use axum::http::{HeaderMap, Method};
use tracing::Span;

/// The target of the exported spans.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) const TARGET: &str = "accord::otel";

/// The span of one request, to be entered around the handler.
pub(crate) fn request_span(method: &Method, route: &str, headers: &HeaderMap) -> Span {
    #[cfg(feature = "otel")]
    {
        use tracing::field::Empty;
        use tracing_opentelemetry::OpenTelemetrySpanExt as _;
        let request_id = headers
            .get(super::ops::REQUEST_ID)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let span = tracing::trace_span!(
            target: "accord::otel",
            "request",
            otel.name = %format_args!("{method} {route}"),
            otel.kind = "server",
            otel.status_code = Empty,
            http.request.method = %method,
            http.route = %route,
            http.response.status_code = Empty,
            accord.request_id = %request_id,
        );
        if !span.is_disabled() {
            let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
                propagator.extract(&Headers(headers))
            });
            // Fails only for a span the OpenTelemetry layer does not see.
            let _ = span.set_parent(parent);
        }
        span
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = (method, route, headers);
        Span::none()
    }
}

/// Records the response status on a [`request_span`] (5xx: an error).
pub(crate) fn record_status(span: &Span, status: u16) {
    span.record("http.response.status_code", status);
    if status >= 500 {
        span.record("otel.status_code", "ERROR");
    }
}

/// The span of one service operation (`campaign.search`, …).
pub(crate) fn operation(name: &'static str) -> Span {
    #[cfg(feature = "otel")]
    {
        tracing::trace_span!(
            target: "accord::otel",
            "operation",
            otel.name = name,
            accord.outcome = tracing::field::Empty,
        )
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = name;
        Span::none()
    }
}

/// Records an operation's outcome: a fixed word or an error code.
pub(crate) fn record_outcome(span: &Span, outcome: &'static str) {
    span.record("accord.outcome", outcome);
}

/// The request headers, read by the trace-context propagator.
#[cfg(feature = "otel")]
struct Headers<'a>(&'a HeaderMap);

#[cfg(feature = "otel")]
impl opentelemetry::propagation::Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(axum::http::HeaderName::as_str).collect()
    }
}

/// A `tracing` layer that exports Accord's spans (those above, and only
/// those) through `tracer`, whatever the other layers filter:
///
/// ```no_run
/// use opentelemetry::trace::TracerProvider as _;
/// use tracing_subscriber::layer::SubscriberExt as _;
/// # fn f(provider: opentelemetry_sdk::trace::SdkTracerProvider) {
/// let subscriber = tracing_subscriber::registry()
///     .with(accord::http::otel::layer(provider.tracer("accord")));
/// # let _ = subscriber; }
/// ```
#[cfg(feature = "otel")]
pub fn layer<S>(tracer: opentelemetry_sdk::trace::Tracer) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer as _;
    tracing_opentelemetry::layer()
        .with_tracer(tracer)
        // Only the attributes named above: the target, thread, source
        // location and busy/idle times say nothing to an operator.
        .with_target(false)
        .with_threads(false)
        .with_location(false)
        .with_tracked_inactivity(false)
        .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
            meta.is_span() && meta.target() == TARGET
        }))
}
