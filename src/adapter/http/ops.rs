//! Operations routes, without authentication: liveness, readiness (the
//! store answers), the OpenAPI document and the metrics. Also the request
//! id, the request log and the request metrics.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::metrics::Metrics;
use super::{Api, HttpStore};

/// The body of `/healthz` and `/readyz`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Health {
    /// `ok` (live) or `ready`.
    pub status: String,
}

/// The process is up.
///
/// Answers without touching the store: for liveness probes. No token.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    responses((status = 200, description = "The process serves requests", body = Health)),
)]
pub(crate) async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".to_owned(),
    })
}

/// The store answers: the instance can serve requests.
///
/// Pings the store; 503 with `Retry-After` when it does not answer. For
/// readiness probes and load balancers. No token.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    responses(
        (status = 200, description = "Ready", body = Health),
        (status = 503, description = "The store is unreachable; retry after Retry-After seconds", body = super::error::Problem, content_type = "application/problem+json"),
    ),
)]
pub(crate) async fn readyz<S: HttpStore>(
    State(api): State<Api<S>>,
) -> Result<Json<Health>, ApiError> {
    api.store.ping().await?;
    Ok(Json(Health {
        status: "ready".to_owned(),
    }))
}

/// Refuses a request whose target (path and query) is longer than
/// [`MAX_URI_BYTES`](super::MAX_URI_BYTES): a 414 problem. (hyper's own
/// limit is far higher, and answers without a body.)
pub(crate) async fn limit_target(req: Request, next: Next) -> Response {
    let len = req
        .uri()
        .path_and_query()
        .map_or(0, |target| target.as_str().len());
    if len > super::MAX_URI_BYTES {
        return ApiError::uri_too_long(super::MAX_URI_BYTES).into_response();
    }
    next.run(req).await
}

/// The request id header, read and returned.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The id of the request: the client's `x-request-id` when it is 1 to 128
/// characters of letters, digits and `-_.:` (anything else could forge
/// log lines or carry data), a new UUID otherwise.
fn request_id(req: &Request) -> HeaderValue {
    req.headers()
        .get(&REQUEST_ID)
        .filter(|v| {
            let b = v.as_bytes();
            (1..=128).contains(&b.len())
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || b"-_.:".contains(c))
        })
        .cloned()
        .unwrap_or_else(|| {
            HeaderValue::from_str(&uuid::Uuid::new_v4().to_string())
                .expect("a UUID is a header value")
        })
}

/// Which surface a request came in by: the API (log target
/// `accord::http`) or the admin console (`accord::admin`). Both share the
/// request id, the log line and the request metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Surface {
    /// The HTTP API.
    Api,
    /// The admin console.
    #[cfg_attr(not(feature = "admin"), allow(dead_code))]
    Admin,
}

/// What [`observe`] needs: where the metrics go, and which surface it logs.
pub(crate) type Observed = (Arc<Metrics>, Surface);

/// Around every request: its id (set on the request for the handlers,
/// returned on the response, and a `request_id` field of a span that every
/// log line of the request carries); one log line; the request metrics.
///
/// The log line is at info (successful health probes and metrics scrapes
/// at debug): method, route TEMPLATE, status, latency. Never the raw path,
/// the query string, a body, a header or the client address: those can
/// carry personal data (`dataSubject`, device ids, IPs).
pub(crate) async fn observe(
    State((metrics, surface)): State<Observed>,
    mut req: Request,
    next: Next,
) -> Response {
    use tracing::Instrument as _;
    let id = request_id(&req);
    req.headers_mut().insert(REQUEST_ID, id.clone());
    let text = id.to_str().unwrap_or_default();
    let span = match surface {
        Surface::Api => tracing::info_span!(target: "accord::http", "request", request_id = %text),
        Surface::Admin => {
            tracing::info_span!(target: "accord::admin", "request", request_id = %text)
        }
    };
    let mut res = async move {
        let start = Instant::now();
        let method = req.method().clone();
        let route = req
            .extensions()
            .get::<MatchedPath>()
            .map_or_else(|| "(no route)".to_owned(), |m| m.as_str().to_owned());
        let traced = super::otel::request_span(&method, &route, text, req.headers());
        let res = next.run(req).instrument(traced.clone()).await;
        super::otel::record_status(&traced, res.status().as_u16());
        let elapsed = start.elapsed();
        metrics.request(
            method.as_str(),
            &route,
            res.status().as_u16(),
            elapsed.as_secs_f64(),
        );
        log_request(
            surface,
            &method,
            &route,
            &res,
            elapsed.as_secs_f64() * 1000.0,
        );
        res
    }
    .instrument(span)
    .await;
    res.headers_mut().insert(REQUEST_ID, id);
    res
}

/// The log line of one request.
fn log_request(
    surface: Surface,
    method: &axum::http::Method,
    route: &str,
    res: &Response,
    latency_ms: f64,
) {
    // A load balancer probes every second or so, Prometheus scrapes every
    // few: successful ones are logged at debug, so they do not drown the
    // traffic at info.
    let probe =
        route.ends_with("/healthz") || route.ends_with("/readyz") || route.ends_with("/metrics");
    let probe = probe && res.status().is_success();
    macro_rules! line {
        ($level:ident, $target:literal) => {
            tracing::$level!(
                target: $target,
                method = %method,
                route = %route,
                status = res.status().as_u16(),
                latency_ms = format_args!("{latency_ms:.2}"),
                "request"
            )
        };
    }
    match (surface, probe) {
        (Surface::Api, true) => line!(debug, "accord::http"),
        (Surface::Api, false) => line!(info, "accord::http"),
        (Surface::Admin, _) => line!(info, "accord::admin"),
    }
}

/// The Prometheus metrics (OpenMetrics text), see [`super::metrics`].
pub(crate) async fn metrics<S: HttpStore>(State(api): State<Api<S>>) -> Response {
    let body = api.metrics.render(api.store.pool_state());
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}
