//! The content store, under `/cms/api/projects/{projId}/c/{type}`, for the
//! types `svc-privacy-notice-v1`, `svc-consent-v1`,
//! `svc-consent-acceptance-v1` and `svc-purpose-v1`: list (bare array,
//! total in `X-Total-Count`), read one, create (201), replace (200; the
//! acceptance update answers the reduced envelope the spec shows). Reads
//! and writes answer the version as an `ETag`; a replace with `If-Match`
//! (or `version` in the body) is refused when the record moved on, one
//! without is last-writer-wins (`docs/consent.md`).
//!
//! The specification asks no scope here; the design does: `cms.r` to read,
//! `cms.w` to write — a store of personal data is not open to every token.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::auth::Principal;
use super::error::ApiError;
use super::extract::{JsonBody, MountPrefix, PathParams, QueryParams};
use super::respond::{page_response, percent_encode};
use super::{Api, HttpStore};
use crate::core::consent::{ContentQuery, ContentType, Envelope, ReducedEnvelope};
use crate::Error;
use crate::ErrorCode;

/// The body of a create or replace: the attributes of the content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ContentBody {
    /// The attributes, as the content type's table lists them.
    pub data: Map<String, Value>,
    /// On a replace: the version the change is based on (as `If-Match`
    /// does); a record at another version is not changed (409
    /// `stale_version`). Left out: the last writer wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
}

/// The `ETag` of a version: its number, quoted.
fn etag(version: i64) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!("\"{version}\"")).ok()
}

fn with_etag(mut res: Response, version: i64) -> Response {
    if let Some(v) = etag(version) {
        res.headers_mut().insert(header::ETAG, v);
    }
    res
}

fn invalid_if_match(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidIfMatch, message)
}

/// The version a replace names: `If-Match: "3"` (the `ETag` of a read),
/// or `version` in the body; both must agree. `If-Match: *` names none.
fn named_version(headers: &HeaderMap, body: Option<i64>) -> Result<Option<i64>, Error> {
    let mut values = headers.get_all(header::IF_MATCH).iter();
    let header = match (values.next(), values.next()) {
        (None, _) => None,
        (Some(v), None) => {
            let text = v
                .to_str()
                .map_err(|_| invalid_if_match("If-Match must be ASCII"))?
                .trim();
            if text == "*" {
                None
            } else {
                let version = text
                    .strip_prefix('"')
                    .and_then(|t| t.strip_suffix('"'))
                    .and_then(|t| t.parse::<i64>().ok())
                    .ok_or_else(|| {
                        invalid_if_match(
                            "If-Match must be one entity tag of a version, such as \"3\" (the ETag of a read), or *",
                        )
                    })?;
                Some(version)
            }
        }
        (Some(_), Some(_)) => {
            return Err(invalid_if_match("send one If-Match header"));
        }
    };
    match (header, body) {
        (Some(h), Some(b)) if h != b => Err(invalid_if_match(format!(
            "If-Match names version {h}, the body's version {b}"
        ))),
        (h, b) => Ok(h.or(b)),
    }
}

/// Lists the current versions of a type.
///
/// Filters are query parameters named `data.<attribute>` (`?data.status=PUBLISHED`):
/// exact matches, "contains" for array attributes, several AND-ed. Also
/// `page` (zero-based), `size` (1 to 1000) and `sort=data.<attr>[,asc|desc]`
/// (repeatable). Any other parameter is a 400.
#[utoipa::path(
    get,
    path = "/cms/api/projects/{projId}/c/{type}",
    tag = "content store",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("type" = ContentTypeName, Path, description = "The content type"),
        ("page" = Option<u32>, Query, description = "Zero-based page (default 0)"),
        ("size" = Option<u32>, Query, description = "Page size, 1 to 1000 (default 20)"),
        ("sort" = Option<Vec<String>>, Query, explode = true, description = "data.<attribute>[,asc|desc], repeatable"),
    ),
    responses((status = 200, description = "A page of envelopes; the total is in X-Total-Count", body = Vec<Envelope>,
        headers(("X-Total-Count" = u64, description = "Number of matching records over all pages")))),
    security(("bearer" = ["cms.r"]))
)]
pub(crate) async fn list_content<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let q = ContentQuery::from_pairs(query.pairs().iter().map(|(k, v)| (k, v)))?;
    let page = api
        .consent
        .list_content(path.project(), path.get("type"), &q)
        .await?;
    Ok(page_response(page.map(|r| r.envelope())))
}

/// The current version of one record.
///
/// The `ETag` is the record's version, for `If-Match` on a replace. Earlier
/// versions are kept: a replace never overwrites history.
#[utoipa::path(
    get,
    path = "/cms/api/projects/{projId}/c/{type}/{id}",
    tag = "content store",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("type" = ContentTypeName, Path, description = "The content type"),
        ("id" = String, Path, description = "Content id"),
    ),
    responses((status = 200, description = "The envelope", body = Envelope,
        headers(("ETag" = String, description = "The version, for If-Match on a replace")))),
    security(("bearer" = ["cms.r"]))
)]
pub(crate) async fn get_content<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Response, ApiError> {
    let record = api
        .consent
        .content(path.project(), path.get("type"), path.get("id"))
        .await?;
    Ok(with_etag(
        Json(record.envelope()).into_response(),
        record.version,
    ))
}

/// Creates a record (version 1); `createdBy` is the token's `sub`.
///
/// `data` holds the attributes of the content type; every missing required
/// attribute and every bad value is reported at once (422, each error
/// naming `data.<attribute>`). An acceptance follows the consent rules of
/// the consent route: a `PUBLISHED` consent of its application, only its
/// purposes, evidence fields set by the server.
#[utoipa::path(
    post,
    path = "/cms/api/projects/{projId}/c/{type}",
    tag = "content store",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("type" = ContentTypeName, Path, description = "The content type"),
    ),
    request_body(content = ContentBody, content_type = "application/json"),
    responses((status = 201, description = "Created", body = Envelope,
        headers(("Location" = String, description = "Address of the new record"),
            ("ETag" = String, description = "The version, for If-Match on a replace")))),
    security(("bearer" = ["cms.w"]))
)]
pub(crate) async fn create_content<S: HttpStore>(
    State(api): State<Api<S>>,
    MountPrefix(prefix): MountPrefix,
    path: PathParams,
    principal: Principal,
    JsonBody(body): JsonBody<ContentBody>,
) -> Result<Response, ApiError> {
    let (project, content_type) = (path.project(), path.get("type"));
    let record = api
        .consent
        .create_content(
            project,
            content_type,
            Value::Object(body.data),
            &principal.sub,
        )
        .await?;
    let location = format!(
        "{prefix}/cms/api/projects/{}/c/{}/{}",
        percent_encode(project),
        percent_encode(content_type),
        percent_encode(&record.id)
    );
    let mut res = (StatusCode::CREATED, Json(record.envelope())).into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        res.headers_mut().insert(header::LOCATION, v);
    }
    Ok(with_etag(res, record.version))
}

/// Replaces the whole `data` of a record: attributes missing from the body
/// become `null` (except the evidence of an acceptance, which an edit
/// keeps); the previous version is kept (history is append-only). The
/// acceptance update answers only `id`, `contentType` (`id`, `name`,
/// `alias`), `projectId` and `data`.
///
/// Without `If-Match` (or `version` in the body) the last writer wins:
/// concurrent replaces each append a version. With one, a record at
/// another version is left unchanged: 409 `stale_version`.
#[utoipa::path(
    put,
    path = "/cms/api/projects/{projId}/c/{type}/{id}",
    tag = "content store",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("type" = ContentTypeName, Path, description = "The content type"),
        ("id" = String, Path, description = "Content id"),
        ("If-Match" = Option<String>, Header, description = "The ETag of the version the change is based on (\"3\"), or *"),
    ),
    request_body(content = ContentBody, content_type = "application/json"),
    responses(
        (status = 200, description = "The new version: an Envelope, or for svc-consent-acceptance-v1 a ReducedEnvelope",
            body = inline(ReplaceResponse),
            headers(("ETag" = String, description = "The new version"))),
        (status = 409, description = "The record is not at the version If-Match names (stale_version)", body = super::error::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["cms.w"]))
)]
pub(crate) async fn replace_content<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    principal: Principal,
    headers: HeaderMap,
    JsonBody(body): JsonBody<ContentBody>,
) -> Result<Response, ApiError> {
    let content_type = path.get("type");
    let (project, id) = (path.project(), path.get("id"));
    let data = Value::Object(body.data);
    let record = match named_version(&headers, body.version)? {
        Some(version) => {
            api.consent
                .replace_content_if(project, content_type, id, version, data, &principal.sub)
                .await?
        }
        None => {
            api.consent
                .replace_content(project, content_type, id, data, &principal.sub)
                .await?
        }
    };
    let res = if ContentType::parse(content_type) == Some(ContentType::ConsentAcceptance) {
        Json(record.reduced_envelope()).into_response()
    } else {
        Json(record.envelope()).into_response()
    };
    Ok(with_etag(res, record.version))
}

/// The `{type}` of a content-store path, for the OpenAPI document.
#[derive(Serialize, utoipa::ToSchema)]
#[allow(dead_code)]
pub(crate) enum ContentTypeName {
    /// Privacy notices.
    #[serde(rename = "svc-privacy-notice-v1")]
    PrivacyNotice,
    /// Consents.
    #[serde(rename = "svc-consent-v1")]
    Consent,
    /// Consent acceptances.
    #[serde(rename = "svc-consent-acceptance-v1")]
    ConsentAcceptance,
    /// The purpose catalogue (`code`, `nameEn`, `nameTh`).
    #[serde(rename = "svc-purpose-v1")]
    Purpose,
}

/// The response of a replace, for the OpenAPI document: an [`Envelope`],
/// or for the acceptance a [`ReducedEnvelope`]. `anyOf`, not `oneOf`: an
/// envelope also has every property of the reduced one, so it matches
/// both (the path's `{type}` says which one the route answers).
pub(crate) struct ReplaceResponse;

impl utoipa::PartialSchema for ReplaceResponse {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::AnyOfBuilder;
        use utoipa::openapi::Ref;
        AnyOfBuilder::new()
            .item(Ref::from_schema_name("Envelope"))
            .item(Ref::from_schema_name("ReducedEnvelope"))
            .description(Some(
                "An Envelope; for svc-consent-acceptance-v1 a ReducedEnvelope",
            ))
            .into()
    }
}

impl utoipa::ToSchema for ReplaceResponse {
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        use utoipa::PartialSchema;
        schemas.push(("Envelope".to_owned(), Envelope::schema()));
        <Envelope as utoipa::ToSchema>::schemas(schemas);
        schemas.push(("ReducedEnvelope".to_owned(), ReducedEnvelope::schema()));
        <ReducedEnvelope as utoipa::ToSchema>::schemas(schemas);
    }
}
