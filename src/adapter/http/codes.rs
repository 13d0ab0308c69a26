//! The code pool routes, under `/campaign/api/projects/{projId}`: a
//! campaign's codes (generate, import, export, list, deactivate) and the
//! lookup of one code.
//!
//! Generation is synchronous and bounded: at most
//! [`MAX_HTTP_GENERATE`] codes per request (seconds of work on SQLite), all
//! stored or none; a larger pool takes several requests, or `accord codes
//! generate` on the command line. Handlers decide nothing: the rules are
//! in [`CampaignService`](crate::service::campaign::CampaignService).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::error::ApiError;
use super::extract::{path_uuid, JsonBody, PathParams, QueryParams, MAX_BODY_BYTES};
use super::respond::page_response;
use super::{Api, HttpStore};
use crate::core::campaign::codes::{GenerateCodes, PromoCode};
use crate::core::error::ErrorCode;
use crate::service::campaign::MAX_HTTP_GENERATE;
use crate::Error;

fn campaign_id(path: &PathParams) -> Result<Uuid, ApiError> {
    path_uuid(path.get("id"), ErrorCode::CampaignNotFound, "campaign")
}

/// How many codes a generate or import stored.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CodesStored {
    /// The campaign whose pool holds them.
    campaign_id: Uuid,
    /// How many codes were stored.
    count: u64,
}

/// One code and the campaign it unlocks.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CodeLookup {
    /// The code as generated or imported.
    code: String,
    /// The campaign whose pool holds the code.
    campaign_id: Uuid,
    /// The campaign's `refCode`; `null` when the campaign was deleted.
    campaign_code: Option<String>,
    /// How many redemptions may use the code.
    usage_limit: i64,
    /// How many (not cancelled) redemptions used it.
    used: i64,
    /// Deactivated codes are refused by redeem.
    active: bool,
    /// When generated or imported.
    created_date: DateTime<Utc>,
}

/// A CSV request body: `Content-Type: text/csv`, UTF-8, at most 1 MiB.
pub(crate) struct CsvBody(pub String);

fn is_csv(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("text/csv"))
}

impl<S: Send + Sync> FromRequest<S> for CsvBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_csv(req.headers()) {
            return Err(Error::new(
                ErrorCode::UnsupportedMediaType,
                "send the codes as CSV, with Content-Type: text/csv",
            )
            .into());
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
        String::from_utf8(bytes.to_vec())
            .map(CsvBody)
            .map_err(|_| ApiError::malformed_json("the CSV body is not UTF-8"))
    }
}

/// Lists a campaign's codes with their usage, in normalized order.
///
/// A bare JSON array, one page of it; the total is in `X-Total-Count`.
#[utoipa::path(
    get,
    path = "/campaign/api/projects/{projId}/campaigns/{id}/codes",
    tag = "campaign codes",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = Uuid, Path, description = "Campaign id"),
        ("page" = Option<u32>, Query, description = "Zero-based page (default 0)"),
        ("size" = Option<u32>, Query, description = "Page size, 1 to 1000 (default 20)"),
    ),
    responses((status = 200, description = "A page of codes; the total is in X-Total-Count", body = Vec<PromoCode>,
        headers(("X-Total-Count" = u64, description = "Number of codes of the campaign")))),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn list_codes<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let (page, size) = query.only_paging()?;
    let id = campaign_id(&path)?;
    Ok(page_response(
        api.campaigns
            .list_codes(path.project(), id, page, size)
            .await?,
    ))
}

/// Generates codes into a campaign's pool: all of them or none.
///
/// Each code is `prefix` + `length` characters drawn at random from
/// `charset` + `suffix`; the default charset
/// `23456789ABCDEFGHJKMNPQRSTUVWXYZ` leaves out the look-alikes 0, O, 1, I
/// and L. Codes are unique in the project (case, spaces and dashes aside):
/// a draw that meets a taken code is drawn again. At most 100,000 codes per
/// request; the alphabet and length must give at least 1000 times as many
/// codes as asked for (422 `code_space_too_small`).
#[utoipa::path(
    post,
    path = "/campaign/api/projects/{projId}/campaigns/{id}/codes/generate",
    tag = "campaign codes",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = Uuid, Path, description = "Campaign id"),
    ),
    request_body(content = GenerateCodes, content_type = "application/json",
        example = json!({"count": 1000, "length": 8, "prefix": "SPRING-", "usageLimit": 1})),
    responses(
        (status = 201, description = "The codes were stored", body = CodesStored),
        (status = 409, description = "Taken codes fill the space of this length and affixes (code_space_exhausted); nothing stored", body = super::error::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn generate_codes<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    JsonBody(request): JsonBody<GenerateCodes>,
) -> Result<Response, ApiError> {
    let id = campaign_id(&path)?;
    let count = api
        .campaigns
        .generate_codes(path.project(), id, &request, MAX_HTTP_GENERATE, None)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(CodesStored {
            campaign_id: id,
            count,
        }),
    )
        .into_response())
}

/// Imports codes from a CSV file into a campaign's pool: all or none.
///
/// One code a line in the first column; an optional second column
/// `usageLimit` (else the `usageLimit` parameter, else 1); further columns
/// (as the export writes them) are ignored, and a first line starting with
/// `code` is a header. Codes hold letters, digits, `-` and `_`. A code
/// already in the project, or twice in the file (case, spaces and dashes
/// aside), refuses the whole file: 409 `duplicate_code` naming them, or 422
/// with the line.
#[utoipa::path(
    post,
    path = "/campaign/api/projects/{projId}/campaigns/{id}/codes/import",
    tag = "campaign codes",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = Uuid, Path, description = "Campaign id"),
        ("usageLimit" = Option<u32>, Query, description = "Usage limit of the lines without one, 1 to 1,000,000,000 (default 1)"),
    ),
    request_body(content = String, content_type = "text/csv",
        example = json!("code,usageLimit\nWELCOME-AB12\nWELCOME-CD34,5\n")),
    responses(
        (status = 201, description = "The codes were stored", body = CodesStored),
        (status = 409, description = "Codes already in the project (duplicate_code, `errors` names them); nothing stored", body = super::error::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn import_codes<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
    CsvBody(csv): CsvBody,
) -> Result<Response, ApiError> {
    query.allow(&["usageLimit"], |_| false)?;
    let usage_limit = query.number("usageLimit")?.map(i64::from);
    let id = campaign_id(&path)?;
    let count = api
        .campaigns
        .import_codes(path.project(), id, &csv, usage_limit, None)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(CodesStored {
            campaign_id: id,
            count,
        }),
    )
        .into_response())
}

/// Exports a campaign's codes as CSV, in normalized order.
///
/// Columns `code,usageLimit,used,active,createdDate`; the import reads the
/// file back (its `used` and `active` columns are not imported). The body
/// is streamed (chunked, no `Content-Length`), 10,000 codes per store
/// read, so a pool of any size is exported in bounded memory.
#[utoipa::path(
    get,
    path = "/campaign/api/projects/{projId}/campaigns/{id}/codes/export",
    tag = "campaign codes",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = Uuid, Path, description = "Campaign id"),
    ),
    responses((status = 200, description = "The codes as CSV", body = String, content_type = "text/csv")),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn export_codes<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Response, ApiError> {
    let id = campaign_id(&path)?;
    // An unknown campaign is a problem before the first byte; then the
    // body streams a batch of codes at a time, so a pool of any size is
    // exported in bounded memory. A store failure midway cuts the body
    // short (the client sees an incomplete response, never a partial file
    // as complete).
    let export = api.campaigns.code_export(path.project(), id).await?;
    let campaigns = Arc::clone(&api.campaigns);
    let pieces = futures_util::stream::unfold(Some(export), move |state| {
        let campaigns = Arc::clone(&campaigns);
        async move {
            let mut export = state?;
            match campaigns.next_codes_csv(&mut export).await {
                Ok(Some(chunk)) => Some((Ok(chunk), Some(export))),
                Ok(None) => None,
                Err(e) => {
                    tracing::warn!(error = %e, "code export cut short");
                    Some((Err(std::io::Error::other(e.to_string())), None))
                }
            }
        }
    });
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/csv; charset=utf-8"),
        )],
        axum::body::Body::from_stream(pieces),
    )
        .into_response())
}

async fn set_active<S: HttpStore>(
    api: &Api<S>,
    path: &PathParams,
    active: bool,
) -> Result<Json<PromoCode>, ApiError> {
    let id = campaign_id(path)?;
    Ok(Json(
        api.campaigns
            .set_code_active(path.project(), id, path.get("code"), active)
            .await?,
    ))
}

/// Deactivates one code of a campaign.
///
/// Redeem refuses it (409 `code_inactive`); its past redemptions stand, and
/// cancelling one still gives its use back. Idempotent.
#[utoipa::path(
    post,
    path = "/campaign/api/projects/{projId}/campaigns/{id}/codes/{code}/deactivate",
    tag = "campaign codes",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = Uuid, Path, description = "Campaign id"),
        ("code" = String, Path, description = "The code (case, spaces and dashes aside)"),
    ),
    responses((status = 200, description = "The code, deactivated", body = PromoCode)),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn deactivate_code<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Json<PromoCode>, ApiError> {
    set_active(&api, &path, false).await
}

/// Activates a deactivated code again.
///
/// Redeem accepts it again while it has uses left. Idempotent.
#[utoipa::path(
    post,
    path = "/campaign/api/projects/{projId}/campaigns/{id}/codes/{code}/activate",
    tag = "campaign codes",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = Uuid, Path, description = "Campaign id"),
        ("code" = String, Path, description = "The code (case, spaces and dashes aside)"),
    ),
    responses((status = 200, description = "The code, active", body = PromoCode)),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn activate_code<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Json<PromoCode>, ApiError> {
    set_active(&api, &path, true).await
}

/// Looks a code up: the campaign it unlocks and its usage.
///
/// Case, spaces and dashes do not matter. A client may check a code a
/// customer typed before the order is placed; redeem checks it again, in
/// the same atomic step that takes its use.
#[utoipa::path(
    get,
    path = "/campaign/api/projects/{projId}/codes/{code}",
    tag = "campaign codes",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("code" = String, Path, description = "The code (case, spaces and dashes aside)"),
    ),
    responses((status = 200, description = "The code and its campaign", body = CodeLookup)),
    security(("bearer" = ["campaign.r"]))
)]
pub(crate) async fn code_lookup<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Json<CodeLookup>, ApiError> {
    let info = api
        .campaigns
        .code_info(path.project(), path.get("code"))
        .await?;
    Ok(Json(CodeLookup {
        code: info.code.code,
        campaign_id: info.code.campaign_id,
        campaign_code: info.campaign_code,
        usage_limit: info.code.usage_limit,
        used: info.code.used,
        active: info.code.active,
        created_date: info.code.created_date,
    }))
}
