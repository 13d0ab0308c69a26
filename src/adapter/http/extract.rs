//! Request extractors whose failures are problems, never axum's plain-text
//! rejections: a JSON body (415, 413, 400 with the field path), query
//! parameters (400 naming the parameter), path ids (404).

use axum::body::{Bytes, HttpBody};
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::{header, request::Parts, HeaderMap, StatusCode};
use serde::de::DeserializeOwned;
use uuid::Uuid;

use super::error::ApiError;
use crate::store::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
use crate::Error;
use crate::ErrorCode;

/// Largest request body, in bytes (1 MiB).
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// A JSON request body.
///
/// - a body without a JSON `Content-Type` (`application/json` or
///   `application/*+json`): 415;
/// - no body at all: 400 `body_required`;
/// - over [`MAX_BODY_BYTES`]: 413;
/// - not arrived within the body read timeout of
///   [`serve`](super::serve): 408 `body_timeout`;
/// - not JSON: 400 `malformed_json`;
/// - a value of the wrong type: 400 `invalid_json` with the field path
///   (`cart.items[0].tags`);
/// - a missing required field: 422 `validation_failed`, code `required`,
///   like every other missing field the services report.
#[derive(Debug, Clone)]
pub(crate) struct JsonBody<T>(pub T);

/// Whether a `Content-Type` names JSON.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(if req.body().size_hint().exact() == Some(0) {
                ApiError::body_required()
            } else {
                ApiError::unsupported_media_type()
            });
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::payload_too_large(MAX_BODY_BYTES)
            } else if super::serve::BodyTimeout::caused(&rejection) {
                ApiError::body_timeout()
            } else {
                ApiError::unreadable_body()
            }
        })?;
        match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
            None => Err(ApiError::body_required()),
            // Every body of the API is an object; serde would also read a
            // struct from an array, positionally — not a thing to accept.
            Some(b'[') => Err(ApiError::invalid_json(
                String::new(),
                "expected a JSON object, found an array".to_owned(),
            )),
            Some(_) => parse_json(&bytes).map(JsonBody),
        }
    }
}

/// Parses a JSON document, naming the field of a type error.
///
/// The path of a field is only needed for the error, and tracking it costs
/// about as much as the parse itself (every value goes through
/// `serde_path_to_error`'s wrappers): a valid body is parsed once, plainly;
/// an invalid one is parsed again with the path tracked, for the problem.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if let Ok(value) = serde_json::from_slice(bytes) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize::<_, T>(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        json_error(if path == "." { String::new() } else { path }, &inner)
    })?;
    de.end()
        .map_err(|e| ApiError::malformed_json(format!("the request body is not JSON: {e}")))?;
    Ok(value)
}

fn json_error(path: String, err: &serde_json::Error) -> ApiError {
    use serde_json::error::Category;
    match err.classify() {
        Category::Data => {
            let message = strip_position(&err.to_string());
            // serde reports a missing field as a data error at the parent;
            // to the client it is a missing required field, like those the
            // services report (422, code `required`).
            if let Some(name) = missing_field(&message) {
                let field = if path.is_empty() {
                    name.to_owned()
                } else {
                    format!("{path}.{name}")
                };
                let message = format!("{name} is required");
                return Error::validation(vec![crate::FieldError::new(
                    field,
                    ErrorCode::Required,
                    message,
                )])
                .into();
            }
            // A number no decimal holds exactly is a valid JSON value that
            // the API refuses: 422 at the field, as validation answers.
            if message.starts_with(crate::core::wire::decimal_number::NOT_EXACT) {
                return Error::validation(vec![crate::FieldError::new(
                    path,
                    ErrorCode::InvalidNumber,
                    message,
                )])
                .into();
            }
            ApiError::invalid_json(path, message)
        }
        Category::Syntax | Category::Eof | Category::Io => {
            ApiError::malformed_json(format!("the request body is not JSON: {err}"))
        }
    }
}

/// `missing field `app`` → `app`.
fn missing_field(message: &str) -> Option<&str> {
    message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next())
}

/// serde_json appends " at line L column C"; the path says more.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// The query string as decoded pairs, in order (a name may repeat).
#[derive(Debug, Clone, Default)]
pub(crate) struct QueryParams(Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(QueryParams::parse(parts.uri.query().unwrap_or_default()))
    }
}

impl QueryParams {
    /// Decodes a query string (`+` is a space, `%XX` bytes, invalid UTF-8
    /// replaced). Never fails.
    pub(crate) fn parse(query: &str) -> Self {
        QueryParams(
            form_urlencoded::parse(query.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// Rejects any parameter not in `known` (and not accepted by `also`).
    pub(crate) fn allow(
        &self,
        known: &[&str],
        also: impl Fn(&str) -> bool,
    ) -> Result<(), ApiError> {
        match self
            .0
            .iter()
            .find(|(k, _)| !known.contains(&k.as_str()) && !also(k))
        {
            Some((k, _)) => Err(ApiError::invalid_parameter(
                k,
                format!(
                    "unknown parameter; this route accepts: {}",
                    known.join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    /// Every value of `name`, in order.
    pub(crate) fn all<'a>(&'a self, name: &str) -> Vec<&'a str> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// Every pair, in order.
    pub(crate) fn pairs(&self) -> &[(String, String)] {
        &self.0
    }

    /// The value of a parameter given at most once.
    pub(crate) fn one<'a>(&'a self, name: &str) -> Result<Option<&'a str>, ApiError> {
        match self.all(name).as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one)),
            _ => Err(ApiError::invalid_parameter(name, "given more than once")),
        }
    }

    /// A boolean parameter: `true` or `false` (absent: `false`).
    pub(crate) fn flag(&self, name: &str) -> Result<bool, ApiError> {
        match self.one(name)? {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(_) => Err(ApiError::invalid_parameter(name, "expected true or false")),
        }
    }

    /// A non-negative integer parameter.
    pub(crate) fn number(&self, name: &str) -> Result<Option<u32>, ApiError> {
        self.one(name)?
            .map(|v| {
                v.parse::<u32>().map_err(|_| {
                    ApiError::invalid_parameter(name, "expected a non-negative integer")
                })
            })
            .transpose()
    }

    /// `page` (zero-based, default 0) and `size` (1 to 1000, default 20).
    pub(crate) fn paging(&self) -> Result<(u32, u32), ApiError> {
        let page = self.number("page")?.unwrap_or(0);
        let size = self.number("size")?.unwrap_or(DEFAULT_PAGE_SIZE);
        if size == 0 || size > MAX_PAGE_SIZE {
            return Err(ApiError::invalid_parameter(
                "size",
                format!("expected 1 to {MAX_PAGE_SIZE}"),
            ));
        }
        Ok((page, size))
    }

    /// [`paging`](Self::paging) of a list that takes no other parameter
    /// (any other is refused).
    pub(crate) fn only_paging(&self) -> Result<(u32, u32), ApiError> {
        self.allow(&["page", "size"], |_| false)?;
        self.paging()
    }
}

/// The parameters of the matched path (`projId`, `id`, …), percent-decoded.
#[derive(Debug, Clone, Default)]
pub(crate) struct PathParams(Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for PathParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let raw = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::invalid_parameter("path", "not valid UTF-8"))?;
        Ok(PathParams(
            raw.iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        ))
    }
}

impl PathParams {
    /// The value of a path parameter (empty when the route has none of
    /// that name: a routing bug that then finds nothing).
    pub(crate) fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// The project of the path.
    pub(crate) fn project(&self) -> &str {
        self.get("projId")
    }
}

/// Parses a resource id of the path; anything that is not a UUID names no
/// resource: 404 with the resource's code.
pub(crate) fn path_uuid(
    raw: &str,
    not_found_code: crate::ErrorCode,
    what: &str,
) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| {
        Error::new(not_found_code, format!("no {what} {raw:?} in this project")).into()
    })
}

/// Where the router is mounted: the path prefix a host's
/// `Router::nest("/promo", …)` took off the request path (`/promo`), or
/// empty when the router serves from `/`. Self links (`Location`) start
/// with it, so they are right however the router is mounted.
pub(crate) struct MountPrefix(pub String);

impl<S: Send + Sync> FromRequestParts<S> for MountPrefix {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let here = parts.uri.path();
        let prefix = parts
            .extensions
            .get::<axum::extract::OriginalUri>()
            .and_then(|original| {
                original
                    .path()
                    .strip_suffix(here)
                    .map(|p| p.trim_end_matches('/').to_owned())
            })
            .unwrap_or_default();
        Ok(MountPrefix(prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        let check = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, v.parse().unwrap());
            is_json(&h)
        };
        assert!(check("application/json"));
        assert!(check("Application/JSON; charset=utf-8"));
        assert!(check("application/merge-patch+json"));
        assert!(!check("text/plain"));
        assert!(!check("application/jsonx"));
        assert!(!is_json(&HeaderMap::new()));
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Item {
        tags: Vec<String>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Body {
        items: Vec<Item>,
    }

    #[test]
    fn json_errors_name_the_field() {
        let e = parse_json::<Body>(br#"{"items": [{"tags": ["a", 3]}]}"#).unwrap_err();
        let p = e.problem();
        assert_eq!((p.status, p.code.as_str()), (400, "invalid_json"));
        assert_eq!(p.errors[0].field, "items[0].tags[1]");
        let e = parse_json::<Body>(br#"{"items": [{}]}"#).unwrap_err();
        let p = e.problem();
        assert_eq!((p.status, p.code.as_str()), (422, "validation_failed"));
        assert_eq!(p.errors[0].code, "required");
        assert_eq!(p.errors[0].field, "items[0].tags");
        let e = parse_json::<Body>(br#"{"items": [}"#).unwrap_err();
        assert_eq!(e.problem().code, "malformed_json");
        let e = parse_json::<Body>(br#"{"items": []} x"#).unwrap_err();
        assert_eq!(e.problem().code, "malformed_json");
        let e = parse_json::<Body>(b"\"text\"").unwrap_err();
        assert_eq!(e.problem().errors[0].field, "");
    }

    #[test]
    fn query_params() {
        let q = QueryParams::parse("sort=name,desc&sort=refCode&q=a+b%21&page=2");
        assert_eq!(q.all("sort"), ["name,desc", "refCode"]);
        assert_eq!(q.one("q").unwrap(), Some("a b!"));
        assert!(q.one("sort").is_err());
        assert_eq!(q.paging().unwrap(), (2, 20));
        assert!(QueryParams::parse("size=0").paging().is_err());
        assert!(QueryParams::parse("size=1001").paging().is_err());
        assert!(QueryParams::parse("page=-1").paging().is_err());
        assert!(QueryParams::parse("explain=yes").flag("explain").is_err());
        assert!(q.allow(&["sort", "q"], |_| false).is_err());
        assert!(q.allow(&["sort", "q", "page"], |_| false).is_ok());
    }
}
