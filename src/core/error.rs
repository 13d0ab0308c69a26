//! The one public error type of the crate.
//!
//! Every stage (formula parsing, validation, storage, …) reports through
//! [`Error`]: a [`ErrorKind`] that says what class of failure it is (and so
//! which HTTP status the `http` adapter maps it to, in one place), a stable
//! snake_case [`code`](Error::code) that clients may match on, a human
//! message, and for validation failures the list of every problem found,
//! each with the path of the field it concerns.

use std::fmt;

use serde::{Deserialize, Serialize};

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
}

/// One problem with one field of the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
pub struct FieldError {
    /// Path of the field, in the JSON names of the input:
    /// `rules[0].when[1].conditions[2].value`.
    pub field: String,
    /// Stable snake_case code of the problem: `required`, `invalid_regex`, …
    pub code: String,
    /// What is wrong, for a human.
    pub message: String,
}

impl FieldError {
    /// A problem with `field`.
    pub fn new(field: impl Into<String>, code: &str, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            code: code.to_owned(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.field, self.message, self.code)
    }
}

/// The error of every fallible operation of the crate.
pub struct Error {
    kind: ErrorKind,
    code: &'static str,
    message: String,
    fields: Vec<FieldError>,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// An error of `kind` with a stable `code` and a message.
    pub fn new(kind: ErrorKind, code: &'static str, message: impl Into<String>) -> Self {
        Error {
            kind,
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
            ..Error::new(ErrorKind::Validation, "validation_failed", message)
        }
    }

    /// A validation failure with a specific code and one field.
    pub fn invalid_field(
        field: impl Into<String>,
        code: &'static str,
        message: impl Into<String>,
    ) -> Self {
        let message = message.into();
        let field = FieldError::new(field, code, message.clone());
        Error {
            fields: vec![field],
            ..Error::new(ErrorKind::Validation, code, message)
        }
    }

    /// A missing resource.
    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::NotFound, code, message)
    }

    /// A conflict with the current state.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Conflict, code, message)
    }

    /// A malformed request.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::BadRequest, code, message)
    }

    /// An exceeded size or work budget.
    pub fn limit(code: &'static str, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::LimitExceeded, code, message)
    }

    /// The store cannot be reached.
    pub fn unavailable(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::new(
            ErrorKind::Unavailable,
            "store_unavailable",
            "the store is unavailable",
        )
        .with_source(source)
    }

    /// An unexpected failure; `source` is kept for logs.
    pub fn internal(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::new(ErrorKind::Internal, "internal", "internal error").with_source(source)
    }

    /// Attaches the underlying cause.
    #[must_use]
    pub fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Attaches field errors.
    #[must_use]
    pub fn with_fields(mut self, fields: Vec<FieldError>) -> Self {
        self.fields = fields;
        self
    }

    /// The class of the failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The stable snake_case code: `quota_exceeded`, `campaign_not_found`, …
    pub fn code(&self) -> &'static str {
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
        d.field("kind", &self.kind)
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
    pub fn push(&mut self, field: impl Into<String>, code: &str, message: impl Into<String>) {
        self.fields.push(FieldError::new(field, code, message));
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
            FieldError::new("name", "required", "is required"),
            FieldError::new("refCode", "required", "is required"),
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
        p.push("a", "required", "is required");
        p.push("b", "invalid", "is invalid");
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
