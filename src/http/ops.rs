//! Operations routes, without authentication: liveness, readiness (the
//! store answers) and the OpenAPI document. Also the request log.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use super::error::ApiError;
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

/// The OpenAPI 3.1 document of every route.
///
/// Generated from the code: every route the router serves, its scopes,
/// request and response schemas, and every status it may answer. No token.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", content_type = "application/json")),
)]
pub(crate) async fn openapi_json() -> Response {
    static DOC: OnceLock<String> = OnceLock::new();
    let doc = DOC.get_or_init(|| {
        serde_json::to_string(&super::openapi()).unwrap_or_else(|_| "{}".to_owned())
    });
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        doc.clone(),
    )
        .into_response()
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

/// One log line per request at info (successful health probes at debug):
/// method, route TEMPLATE, status, latency. Never the raw path, the query string, a body, a header or the
/// client address: those can carry personal data (`dataSubject`, device
/// ids, IPs).
pub(crate) async fn log_request(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "(no route)".to_owned(), |m| m.as_str().to_owned());
    let res = next.run(req).await;
    let latency_ms = start.elapsed().as_secs_f64() * 1000.0;
    // A load balancer probes every second or so: successful probes are
    // logged at debug, so they do not drown the traffic at info.
    let probe = matches!(route.as_str(), "/healthz" | "/readyz") && res.status().is_success();
    macro_rules! line {
        ($level:ident) => {
            tracing::$level!(
                target: "accord::http",
                method = %method,
                route = %route,
                status = res.status().as_u16(),
                latency_ms = format_args!("{latency_ms:.2}"),
                "request"
            )
        };
    }
    if probe {
        line!(debug);
    } else {
        line!(info);
    }
    res
}
