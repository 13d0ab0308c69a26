//! Uploaded files under `/cms/api/projects/{projId}/files`: the screens
//! consents show (`formScreen`). Upload with scope `cms.w`, read with
//! `cms.r`, like the content records that name them.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::auth::Principal;
use super::error::ApiError;
use super::extract::PathParams;
use super::{Api, HttpStore, MAX_BODY_BYTES};
use crate::core::consent::file::{FileInfo, FileType};

/// What an HTML file may do when a browser shows it: nothing but render
/// (no scripts, forms, plugins or requests; a unique origin).
const HTML_POLICY: &str = "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'";

/// Uploads a file.
///
/// The raw bytes of a PNG, JPEG, PDF or HTML file (at most 1 MiB), with its
/// `Content-Type` (`image/png`, `image/jpeg`, `application/pdf`,
/// `text/html`). The type is checked against the file's first bytes, not
/// taken from the header alone (422 `file_type_mismatch`); another type is
/// 415. Files are named by the SHA-256 of their bytes: put that in a
/// consent's `formScreen`, or in an acceptance's. Uploading the same bytes
/// again stores nothing and answers 200 with the first upload.
#[utoipa::path(
    post,
    path = "/cms/api/projects/{projId}/files",
    tag = "content store",
    params(("projId" = String, Path, description = "Project id")),
    request_body(description = "The file's bytes", content(
        (Vec<u8> = "image/png"), (Vec<u8> = "image/jpeg"),
        (Vec<u8> = "application/pdf"), (Vec<u8> = "text/html"))),
    responses(
        (status = 201, description = "Stored", body = FileInfo,
            headers(("Location" = String, description = "`/cms/api/projects/{projId}/files/{sha256}`"))),
        (status = 200, description = "Already stored: the first upload", body = FileInfo,
            headers(("Location" = String, description = "`/cms/api/projects/{projId}/files/{sha256}`"))),
    ),
    security(("bearer" = ["cms.w"]))
)]
pub(crate) async fn upload_file<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    principal: Principal,
    req: Request,
) -> Result<Response, ApiError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = Bytes::from_request(req, &()).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::payload_too_large(MAX_BODY_BYTES)
        } else if super::serve::BodyTimeout::caused(&rejection) {
            ApiError::body_timeout()
        } else {
            ApiError::unreadable_body()
        }
    })?;
    let (info, created) = api
        .consent
        .upload_file(
            path.project(),
            content_type.as_deref(),
            bytes.to_vec(),
            &principal.sub,
        )
        .await?;
    let location = format!(
        "/cms/api/projects/{}/files/{}",
        super::respond::percent_encode(path.project()),
        info.sha256
    );
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut res = (status, Json(info)).into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        res.headers_mut().insert(header::LOCATION, v);
    }
    Ok(res)
}

/// Reads a file.
///
/// The bytes, with their type, `X-Content-Type-Options: nosniff` and
/// `Content-Disposition: inline` naming `<sha256>.<extension>`; an HTML
/// file also gets `Content-Security-Policy: sandbox` (no scripts, no
/// requests), so that showing a stored screen cannot run anything. Files
/// never change: they may be cached for good.
#[utoipa::path(
    get,
    path = "/cms/api/projects/{projId}/files/{sha256}",
    tag = "content store",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("sha256" = String, Path, description = "The file's SHA-256, 64 lowercase hex digits"),
    ),
    responses((status = 200, description = "The file", content(
        (Vec<u8> = "image/png"), (Vec<u8> = "image/jpeg"),
        (Vec<u8> = "application/pdf"), (Vec<u8> = "text/html")),
        headers(
            ("X-Content-Type-Options" = String, description = "`nosniff`"),
            ("Content-Disposition" = String, description = "`inline; filename=\"<sha256>.<extension>\"`"),
            ("Content-Security-Policy" = String, description = "For HTML: `sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'`"),
            ("ETag" = String, description = "The SHA-256, quoted"),
        ))),
    security(("bearer" = ["cms.r"]))
)]
pub(crate) async fn get_file<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Response, ApiError> {
    let file = api.consent.file(path.project(), path.get("sha256")).await?;
    let kind = FileType::from_mime(&file.content_type);
    let extension = kind.map_or("bin", FileType::extension);
    let mut headers = vec![
        (header::CONTENT_TYPE, file.content_type.clone()),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
        (
            header::CONTENT_DISPOSITION,
            format!("inline; filename=\"{}.{extension}\"", file.sha256),
        ),
        (
            header::CACHE_CONTROL,
            "private, max-age=31536000, immutable".to_owned(),
        ),
        (header::ETAG, format!("\"{}\"", file.sha256)),
    ];
    if kind == Some(FileType::Html) {
        headers.push((header::CONTENT_SECURITY_POLICY, HTML_POLICY.to_owned()));
    }
    let mut res = file.bytes.into_response();
    for (name, value) in headers {
        if let Ok(v) = HeaderValue::from_str(&value) {
            res.headers_mut().insert(name, v);
        }
    }
    Ok(res)
}
