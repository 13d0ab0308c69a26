//! The one public error type of the crate.
//!
//! Every stage (formula parsing, validation, storage, …) reports through
//! [`Error`]: a stable [`ErrorCode`] from the [catalogue](catalogue) that
//! clients may match on, which fixes its [`ErrorKind`] (the class of
//! failure, and so the HTTP status: [`ErrorKind::status`]), a human message,
//! and for validation failures the list of every problem found, each with
//! the path of the field it concerns and, where the problem is in a piece of
//! text, the byte range of that text.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub mod catalogue;

pub use catalogue::{Appears, ErrorCode, UnknownCode};

/// A result whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The class of a failure. Each class maps to exactly one HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request itself is malformed: an unknown query parameter value,
    /// a page size out of range. HTTP 400.
    BadRequest,
    /// The request is well-formed but violates the rules: a missing required
    /// field, an invalid regex, an unknown purpose code. [`Error::fields`]
    /// lists every problem. HTTP 422.
    Validation,
    /// The named resource does not exist (in this project). HTTP 404.
    NotFound,
    /// The request conflicts with the current state: a quota that would be
    /// exceeded, a duplicate `refCode`, a stale `version`. HTTP 409.
    Conflict,
    /// A size or work budget of a request was exceeded: too many cart
    /// items, a formula that needs too many steps, too many campaigns in a
    /// project. HTTP 413. (Limits on saved content — rules per campaign,
    /// formula depth — are reported as [`Validation`](Self::Validation)
    /// field errors instead, 422, so that they name the field.)
    LimitExceeded,
    /// The store could not be reached; the caller may retry. HTTP 503.
    Unavailable,
    /// A bug or an unexpected storage failure. Details are logged, never
    /// shown to clients. HTTP 500.
    Internal,
    /// No usable credentials (HTTP adapter). HTTP 401.
    Unauthorized,
    /// Credentials that do not grant the request (HTTP adapter). HTTP 403.
    Forbidden,
    /// The path exists, the method does not (HTTP adapter). HTTP 405.
    MethodNotAllowed,
    /// The request did not arrive in time (HTTP adapter). HTTP 408.
    Timeout,
    /// The request target is too long (HTTP adapter). HTTP 414.
    UriTooLong,
    /// A body that is not JSON (HTTP adapter). HTTP 415.
    UnsupportedMediaType,
    /// Too many requests (HTTP adapter). HTTP 429.
    RateLimited,
    /// The request head is too large (HTTP adapter). HTTP 431.
    HeaderFieldsTooLarge,
}

impl ErrorKind {
    /// The HTTP status of the class: each class has exactly one, given
    /// here and nowhere else.
    pub const fn status(self) -> u16 {
        match self {
            ErrorKind::BadRequest => 400,
            ErrorKind::Unauthorized => 401,
            ErrorKind::Forbidden => 403,
            ErrorKind::NotFound => 404,
            ErrorKind::MethodNotAllowed => 405,
            ErrorKind::Timeout => 408,
            ErrorKind::Conflict => 409,
            ErrorKind::LimitExceeded => 413,
            ErrorKind::UriTooLong => 414,
            ErrorKind::UnsupportedMediaType => 415,
            ErrorKind::Validation => 422,
            ErrorKind::RateLimited => 429,
            ErrorKind::HeaderFieldsTooLarge => 431,
            ErrorKind::Internal => 500,
            ErrorKind::Unavailable => 503,
        }
    }

    /// Every class.
    pub const ALL: &'static [ErrorKind] = &[
        ErrorKind::BadRequest,
        ErrorKind::Unauthorized,
        ErrorKind::Forbidden,
        ErrorKind::NotFound,
        ErrorKind::MethodNotAllowed,
        ErrorKind::Timeout,
        ErrorKind::Conflict,
        ErrorKind::LimitExceeded,
        ErrorKind::UriTooLong,
        ErrorKind::UnsupportedMediaType,
        ErrorKind::Validation,
        ErrorKind::RateLimited,
        ErrorKind::HeaderFieldsTooLarge,
        ErrorKind::Internal,
        ErrorKind::Unavailable,
    ];
}

/// A byte range of a field's text value: where in a formula, an `in` list
/// or a template the problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
pub struct Span {
    /// The first byte.
    pub start: usize,
    /// The byte after the last (equal to `start` for a point, such as the
    /// end of a formula that stops too early).
    pub end: usize,
}

impl From<std::ops::Range<usize>> for Span {
    fn from(r: std::ops::Range<usize>) -> Self {
        Span {
            start: r.start,
            end: r.end,
        }
    }
}

/// One problem with one field of the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
pub struct FieldError {
    /// Path of the field, in the JSON names of the input:
    /// `rules[0].when[1].conditions[2].value`.
    pub field: String,
    /// Stable snake_case code of the problem: `required`, `invalid_regex`, …
    #[cfg_attr(feature = "http", schema(value_type = String))]
    pub code: ErrorCode,
    /// What is wrong, for a human.
    pub message: String,
    /// Where in the field's text the problem is, when the field is a
    /// piece of text with a grammar (a formula, an `in` list, a template).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<Span>,
}

impl FieldError {
    /// A problem with `field`.
    pub fn new(field: impl Into<String>, code: ErrorCode, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            code,
            message: message.into(),
            span: None,
        }
    }

    /// Attaches the byte range of the offending text.
    #[must_use]
    pub fn with_span(mut self, span: impl Into<Span>) -> Self {
        self.span = Some(span.into());
        self
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.field, self.message, self.code)
    }
}

/// The error of every fallible operation of the crate. Cheap to clone:
/// the cause is shared.
#[derive(Clone)]
pub struct Error {
    code: ErrorCode,
    message: String,
    fields: Vec<FieldError>,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// An error with a stable `code` (which fixes its [`ErrorKind`]) and a
    /// message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            fields: Vec::new(),
            source: None,
        }
    }

    /// A validation failure listing every problem found (code `validation_failed`).
    pub fn validation(fields: Vec<FieldError>) -> Self {
        let message = match fields.as_slice() {
            [] => "the input is invalid".to_owned(),
            [one] => format!("the input is invalid: {one}"),
            [first, rest @ ..] => {
                format!("the input is invalid: {first} (and {} more)", rest.len())
            }
        };
        Error {
            fields,
            ..Error::new(ErrorCode::ValidationFailed, message)
        }
    }

    /// A problem with one field reported by its own code (a code that
    /// [appears](ErrorCode::appears) both as a problem and a field code).
    pub fn invalid_field(
        field: impl Into<String>,
        code: ErrorCode,
        message: impl Into<String>,
    ) -> Self {
        Error::from(FieldError::new(field, code, message))
    }

    /// The store cannot be reached.
    pub fn unavailable(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::new(ErrorCode::StoreUnavailable, "the store is unavailable").with_source(source)
    }

    /// An unexpected failure; `source` is kept for logs.
    pub fn internal(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::new(ErrorCode::Internal, "internal error").with_source(source)
    }

    /// Attaches the underlying cause.
    #[must_use]
    pub fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        self.source = Some(Arc::from(source.into()));
        self
    }

    /// Attaches field errors.
    #[must_use]
    pub fn with_fields(mut self, fields: Vec<FieldError>) -> Self {
        self.fields = fields;
        self
    }

    /// The class of the failure (fixed by the code).
    pub fn kind(&self) -> ErrorKind {
        self.code.kind()
    }

    /// The stable snake_case code: `quota_exceeded`, `campaign_not_found`, …
    pub fn code(&self) -> &'static str {
        self.code.as_str()
    }

    /// The code as a catalogue entry, with its title and documentation.
    pub fn error_code(&self) -> ErrorCode {
        self.code
    }

    /// The human-readable message. Never contains internal details for
    /// [`ErrorKind::Internal`] and [`ErrorKind::Unavailable`].
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Every problem found, for [`ErrorKind::Validation`] (may be empty otherwise).
    pub fn fields(&self) -> &[FieldError] {
        &self.fields
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind())
            .field("code", &self.code)
            .field("message", &self.message);
        if !self.fields.is_empty() {
            d.field("fields", &self.fields);
        }
        if let Some(source) = &self.source {
            d.field("source", source);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<FieldError> for Error {
    /// One field's problem, answered by the field's own code.
    fn from(field: FieldError) -> Self {
        Error {
            fields: vec![field.clone()],
            ..Error::new(field.code, field.message)
        }
    }
}

/// Collects every problem of an input before failing, so that one response
/// names all of them (a campaign with five mistakes gets five field errors).
#[derive(Debug, Default)]
pub struct Problems {
    fields: Vec<FieldError>,
}

impl Problems {
    /// No problems yet.
    pub fn new() -> Self {
        Problems::default()
    }

    /// Records a problem.
    pub fn push(&mut self, field: impl Into<String>, code: ErrorCode, message: impl Into<String>) {
        self.fields.push(FieldError::new(field, code, message));
    }

    /// Records a problem found in a piece of text, with its byte range.
    pub fn push_at(
        &mut self,
        field: impl Into<String>,
        code: ErrorCode,
        message: impl Into<String>,
        span: impl Into<Span>,
    ) {
        self.fields
            .push(FieldError::new(field, code, message).with_span(span));
    }

    /// Records problems found by a nested check.
    pub fn extend(&mut self, fields: impl IntoIterator<Item = FieldError>) {
        self.fields.extend(fields);
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// `Ok(())` when nothing was recorded, else a validation [`Error`].
    pub fn into_result(self) -> Result<()> {
        if self.fields.is_empty() {
            Ok(())
        } else {
            Err(Error::validation(self.fields))
        }
    }

    /// The problems recorded so far.
    pub fn into_fields(self) -> Vec<FieldError> {
        self.fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_message_names_first_problem_and_count() {
        let err = Error::validation(vec![
            FieldError::new("name", ErrorCode::Required, "is required"),
            FieldError::new("refCode", ErrorCode::Required, "is required"),
        ]);
        assert_eq!(err.kind(), ErrorKind::Validation);
        assert_eq!(err.code(), "validation_failed");
        assert_eq!(
            err.to_string(),
            "the input is invalid: name: is required (required) (and 1 more)"
        );
        assert_eq!(err.fields().len(), 2);
    }

    #[test]
    fn problems_collect_all() {
        let mut p = Problems::new();
        assert!(p.is_empty());
        p.push("a", ErrorCode::Required, "is required");
        p.push("b", ErrorCode::Invalid, "is invalid");
        let err = p.into_result().unwrap_err();
        assert_eq!(err.fields().len(), 2);
    }

    #[test]
    fn internal_hides_details_in_message() {
        let err = Error::internal("disk on fire");
        assert_eq!(err.message(), "internal error");
        assert!(std::error::Error::source(&err).is_some());
    }
}
