//! Error responses: RFC 9457 `application/problem+json`.
//!
//! This file is the ONE place where an [`ErrorKind`] becomes an HTTP status
//! ([`status_of`]), and where the HTTP-only failures (401, 403, 404 for an
//! unknown route, 405, 413, 415, malformed JSON) are built. Every error
//! response of the adapter is an [`ApiError`] rendered as a [`Problem`].
//!
//! Internal details never reach a client: an [`ErrorKind::Internal`] error
//! is answered with "internal error" and logged with its cause; a panic is
//! caught and answered with a 500 problem, never a dropped connection.

use std::any::Any;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::{Error, ErrorKind, FieldError};

/// The media type of every error response.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// Seconds a client should wait before retrying a 503.
const RETRY_AFTER_SECS: u32 = 1;

/// An RFC 9457 problem details object, the body of every error response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Problem {
    /// A URI naming the problem type: `urn:accord:problem:<code>`.
    #[serde(rename = "type")]
    pub problem_type: String,
    /// The HTTP reason phrase of the status.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong, for a human.
    pub detail: String,
    /// Stable snake_case code clients may match on: `quota_exceeded`,
    /// `invalid_token`, `validation_failed`, …
    pub code: String,
    /// Every problem with a field of the input (validation, wrong JSON
    /// types, bad query parameters); empty otherwise.
    #[serde(default)]
    pub errors: Vec<FieldError>,
}

/// The HTTP status of an error class. Each [`ErrorKind`] maps to exactly one
/// status, here and nowhere else.
pub fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::BadRequest => StatusCode::BAD_REQUEST,
        ErrorKind::Validation => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::LimitExceeded => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        // `ErrorKind` is non-exhaustive: a class added later is a 500 until
        // it is given its status here.
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// An error response of the HTTP adapter (boxed: it travels in every
/// `Result` of the handlers).
#[derive(Debug)]
pub struct ApiError(Box<Inner>);

#[derive(Debug)]
struct Inner {
    status: StatusCode,
    code: &'static str,
    detail: String,
    errors: Vec<FieldError>,
    www_authenticate: Option<String>,
    /// Seconds to wait, for a 429.
    retry_after: Option<u64>,
    /// The library error this came from, kept for the log of a 5xx.
    cause: Option<Error>,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        ApiError(Box::new(Inner {
            status,
            code,
            detail: detail.into(),
            errors: Vec::new(),
            www_authenticate: None,
            retry_after: None,
            cause: None,
        }))
    }

    /// Too many requests for the project or the token: 429 with
    /// `Retry-After` (whole seconds, at least 1).
    pub(crate) fn rate_limited(limit: &str, retry_after: std::time::Duration) -> Self {
        let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!(
                "too many requests for this {limit}; retry after {} s",
                secs.max(1)
            ),
        );
        e.0.retry_after = Some(secs.max(1));
        e
    }

    #[must_use]
    fn with_errors(mut self, errors: Vec<FieldError>) -> Self {
        self.0.errors = errors;
        self
    }

    #[must_use]
    fn with_challenge(mut self, challenge: String) -> Self {
        self.0.www_authenticate = Some(challenge);
        self
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.0.status
    }

    /// The stable code.
    pub fn code(&self) -> &'static str {
        self.0.code
    }

    /// No usable credentials: 401 with `WWW-Authenticate: Bearer`, and
    /// `error="invalid_token"` when a token was sent (RFC 6750 §3).
    pub(crate) fn unauthorized(token_given: bool, detail: impl Into<String>) -> Self {
        let (code, challenge) = if token_given {
            (
                "invalid_token",
                r#"Bearer realm="accord", error="invalid_token""#.to_owned(),
            )
        } else {
            ("unauthorized", r#"Bearer realm="accord""#.to_owned())
        };
        ApiError::new(StatusCode::UNAUTHORIZED, code, detail).with_challenge(challenge)
    }

    /// The token is valid but not for this project.
    pub(crate) fn project_forbidden() -> Self {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "project_forbidden",
            "the token does not grant access to this project",
        )
    }

    /// The token lacks a scope the route needs (RFC 6750 §3.1).
    pub(crate) fn insufficient_scope(missing: &[&str]) -> Self {
        let needed = missing.join(" ");
        ApiError::new(
            StatusCode::FORBIDDEN,
            "insufficient_scope",
            format!("the token lacks the scope(s): {needed}"),
        )
        .with_challenge(format!(
            r#"Bearer realm="accord", error="insufficient_scope", scope="{needed}""#
        ))
    }

    /// A request body that is not JSON (or has no `Content-Type`).
    pub(crate) fn unsupported_media_type() -> Self {
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the request body must be JSON, sent with Content-Type: application/json",
        )
    }

    /// A request body over the size limit.
    pub(crate) fn payload_too_large(limit: usize) -> Self {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the request body exceeds the limit of {limit} bytes"),
        )
    }

    /// A route that needs a body got none.
    pub(crate) fn body_required() -> Self {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "body_required",
            "this request needs a JSON body",
        )
    }

    /// The body could not be read from the connection.
    pub(crate) fn unreadable_body() -> Self {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "unreadable_body",
            "the request body could not be read",
        )
    }

    /// Not JSON at all (syntax error, trailing characters, bad UTF-8).
    pub(crate) fn malformed_json(detail: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "malformed_json", detail)
    }

    /// JSON of the wrong shape: a value of the wrong type at `field`.
    pub(crate) fn invalid_json(field: String, message: String) -> Self {
        let detail = if field.is_empty() {
            format!("the request body has the wrong shape: {message}")
        } else {
            format!("the request body has the wrong shape at {field}: {message}")
        };
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", detail)
            .with_errors(vec![FieldError::new(field, "invalid_type", message)])
    }

    /// A malformed query or path parameter.
    pub(crate) fn invalid_parameter(name: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
            format!("parameter {name}: {message}"),
        )
        .with_errors(vec![FieldError::new(name, "invalid_parameter", message)])
    }

    /// No route has this path.
    pub(crate) fn route_not_found() -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "route_not_found",
            "no route has this path",
        )
    }

    /// The path exists, the method does not.
    pub(crate) fn method_not_allowed() -> Self {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "this path does not accept this method",
        )
    }

    /// The request line's target (path and query) is longer than the
    /// limit.
    pub(crate) fn uri_too_long(limit: usize) -> Self {
        ApiError::new(
            StatusCode::URI_TOO_LONG,
            "uri_too_long",
            format!("the request target (path and query) exceeds {limit} bytes"),
        )
    }

    /// The body did not arrive within the body read timeout.
    pub(crate) fn body_timeout() -> Self {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            "the request body did not arrive in time",
        )
    }

    /// What the server answers where the HTTP layer itself refuses a
    /// request, before any route sees it (see `super::serve`): a head that
    /// is not HTTP (400), too long a target (414) or head (431), a head
    /// that did not arrive in time (408), a connection over the cap (503).
    pub(crate) fn http_layer(status: StatusCode) -> Self {
        let (code, detail) = match status.as_u16() {
            400 => (
                "malformed_request",
                "the request is not valid HTTP/1.1".to_owned(),
            ),
            408 => (
                "head_timeout",
                "the request head did not arrive in time".to_owned(),
            ),
            414 => (
                "uri_too_long",
                "the request target (path and query) is too long".to_owned(),
            ),
            431 => (
                "header_fields_too_large",
                format!(
                    "the request head exceeds {} bytes or {} header fields",
                    super::MAX_HEAD_BYTES,
                    super::MAX_HEADERS
                ),
            ),
            503 => (
                "too_many_connections",
                "the server holds as many connections as it may; retry later".to_owned(),
            ),
            _ => ("bad_request", "the request was refused".to_owned()),
        };
        ApiError::new(status, code, detail)
    }

    /// A bug: a handler panicked.
    pub(crate) fn panicked() -> Self {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error",
        )
    }

    /// The problem object of this error.
    pub fn problem(&self) -> Problem {
        let e = &self.0;
        Problem {
            problem_type: format!("urn:accord:problem:{}", e.code),
            title: e.status.canonical_reason().unwrap_or("Error").to_owned(),
            status: e.status.as_u16(),
            detail: e.detail.clone(),
            code: e.code.to_owned(),
            errors: e.errors.clone(),
        }
    }
}

impl From<Error> for ApiError {
    fn from(err: Error) -> Self {
        let status = status_of(err.kind());
        // The messages of `Internal` and `Unavailable` are generic by
        // construction (`Error::internal`); the cause stays in `cause`.
        let detail = if status.is_server_error() {
            match err.kind() {
                ErrorKind::Unavailable => "the service is unavailable; retry later".to_owned(),
                _ => "internal error".to_owned(),
            }
        } else {
            err.message().to_owned()
        };
        ApiError(Box::new(Inner {
            status,
            code: if status == StatusCode::INTERNAL_SERVER_ERROR {
                "internal"
            } else {
                err.code()
            },
            detail,
            errors: err.fields().to_vec(),
            www_authenticate: None,
            retry_after: None,
            cause: Some(err),
        }))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.0.status;
        if status.is_server_error() {
            // Operators need the cause; clients never see it.
            match &self.0.cause {
                Some(cause) if status == StatusCode::SERVICE_UNAVAILABLE => {
                    tracing::warn!(code = cause.code(), error = %cause, "store unavailable");
                }
                Some(cause) => {
                    tracing::error!(code = cause.code(), error = %cause, "internal error");
                }
                None => {}
            }
        }
        let body = serde_json::to_vec(&self.problem()).unwrap_or_default();
        let mut res = (status, body).into_response();
        let headers = res.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if let Some(challenge) = self
            .0
            .www_authenticate
            .as_deref()
            .and_then(|c| HeaderValue::from_str(c).ok())
        {
            headers.insert(header::WWW_AUTHENTICATE, challenge);
        }
        if status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        }
        if let Some(secs) = self.0.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        res
    }
}

/// Fallback of the router: no route has this path.
pub(crate) async fn route_not_found() -> ApiError {
    ApiError::route_not_found()
}

/// Fallback of every route for a method it does not serve.
pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::method_not_allowed()
}

/// The response to a handler that panicked (tower-http's catch-panic layer).
/// The panic message is logged (it is a bug to fix), never sent.
#[allow(clippy::needless_pass_by_value)] // the signature catch-panic asks for
pub(crate) fn panic_response(payload: Box<dyn Any + Send + 'static>) -> Response {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned());
    tracing::error!(panic = %message, "a handler panicked");
    ApiError::panicked().into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_status() {
        let cases = [
            (ErrorKind::BadRequest, 400),
            (ErrorKind::Validation, 422),
            (ErrorKind::NotFound, 404),
            (ErrorKind::Conflict, 409),
            (ErrorKind::LimitExceeded, 413),
            (ErrorKind::Unavailable, 503),
            (ErrorKind::Internal, 500),
        ];
        for (kind, status) in cases {
            assert_eq!(status_of(kind).as_u16(), status, "{kind:?}");
        }
    }

    #[test]
    fn internal_details_stay_out_of_the_problem() {
        let api: ApiError = Error::internal("password=hunter2 on db-7").into();
        let p = api.problem();
        assert_eq!((p.status, p.code.as_str()), (500, "internal"));
        assert!(!p.detail.contains("hunter2"));
        let api: ApiError = Error::unavailable("connection refused to 10.0.0.7").into();
        let p = api.problem();
        assert_eq!((p.status, p.code.as_str()), (503, "store_unavailable"));
        assert!(!p.detail.contains("10.0.0.7"));
    }

    #[test]
    fn validation_keeps_every_field() {
        let err = Error::validation(vec![
            FieldError::new("name", "required", "is required"),
            FieldError::new("refCode", "required", "is required"),
        ]);
        let p = ApiError::from(err).problem();
        assert_eq!(p.status, 422);
        assert_eq!(p.code, "validation_failed");
        assert_eq!(p.errors.len(), 2);
        assert_eq!(p.problem_type, "urn:accord:problem:validation_failed");
        assert_eq!(p.title, "Unprocessable Entity");
    }
}
