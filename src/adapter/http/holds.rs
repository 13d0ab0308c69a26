//! The quota hold routes, under `/campaign/api/projects/{projId}/holds`:
//! place a hold at checkout, read it, confirm it on payment, release it on
//! abandon (docs/quotas.md, "Holds").

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::error::ApiError;
use super::extract::{path_uuid, JsonBody, PathParams};
use super::{Api, HttpStore};
use crate::core::campaign::{Hold, Redemption};
use crate::service::campaign::HoldRequest;

fn hold_id(path: &PathParams) -> Result<uuid::Uuid, ApiError> {
    path_uuid(path.get("id"), crate::ErrorCode::HoldNotFound, "hold")
}

/// Places a quota hold: reserves what a redeem of the body would charge,
/// until the hold expires.
///
/// The body is a redeem body plus `ttl` (seconds, 1 to 86400, default
/// 900). The campaign is evaluated as a redeem evaluates it and every
/// quota charged, atomically, as if redeemed: while the hold lives (`HELD`
/// until `expiresAt`) its charges count toward every limit, so redeems and
/// other holds cannot take the units it reserves. Confirm it to record the
/// redemption; release it to give the quota back; left alone, it expires
/// and its quota returns by itself.
#[utoipa::path(
    post,
    path = "/campaign/api/projects/{projId}/holds",
    tag = "campaign",
    params(("projId" = String, Path, description = "Project id")),
    request_body(content = HoldRequest, content_type = "application/json",
        example = json!({"campaignCode": "FLASH", "attribute": {"userId": "u1"},
            "cart": {"totalPrice": 1500, "currency": "THB"}, "ttl": 600})),
    responses(
        (status = 201, description = "Placed: the hold, `HELD` until `expiresAt`", body = Hold),
        (status = 422, description = "Invalid request (`invalid_hold_ttl`, an `idempotencyKey`, or anything a redeem refuses)", body = super::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "A quota has no room (quota_exceeded); nothing reserved", body = super::error::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["campaign.w"]))
)]
pub(crate) async fn place_hold<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    JsonBody(request): JsonBody<HoldRequest>,
) -> Result<Response, ApiError> {
    let hold = api.campaigns.place_hold(path.project(), &request).await?;
    Ok((StatusCode::CREATED, Json(hold)).into_response())
}

/// Reads a quota hold.
///
/// `status` is `HELD` (reserving until `expiresAt`), `CONFIRMED` (see
/// `redemptionId`), `RELEASED`, or `EXPIRED` (not confirmed in time).
#[utoipa::path(
    get,
    path = "/campaign/api/projects/{projId}/holds/{id}",
    tag = "campaign",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = uuid::Uuid, Path, description = "Hold id"),
    ),
    responses(
        (status = 200, description = "The hold as it stands now", body = Hold),
        (status = 404, description = "No such hold (hold_not_found)", body = super::error::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["campaign.r"]))
)]
pub(crate) async fn get_hold<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Json<Hold>, ApiError> {
    let id = hold_id(&path)?;
    Ok(Json(api.campaigns.hold(path.project(), id).await?))
}

/// Confirms a quota hold: records its redemption, charging nothing again.
///
/// The redemption (id `redemptionId` of the hold) has the benefits and
/// quota charges the hold was placed with, dated now. Safe to retry: a
/// confirmed hold answers its redemption again with
/// `Idempotent-Replayed: true`. An expired hold is 409 `hold_expired` (its
/// quota was returned: place a new hold or redeem), a released one 409
/// `hold_released`.
#[utoipa::path(
    post,
    path = "/campaign/api/projects/{projId}/holds/{id}/confirm",
    tag = "campaign",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = uuid::Uuid, Path, description = "Hold id"),
    ),
    responses(
        (status = 201, description = "Recorded; or, with `Idempotent-Replayed: true`, the redemption of an earlier confirmation", body = Redemption,
            headers(("Idempotent-Replayed" = String, description = "`true` when the hold was confirmed before"))),
        (status = 404, description = "No such hold (hold_not_found)", body = super::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The hold expired (hold_expired) or was released (hold_released); nothing recorded", body = super::error::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["campaign.w"]))
)]
pub(crate) async fn confirm_hold<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Response, ApiError> {
    let id = hold_id(&path)?;
    let result = api.campaigns.confirm_hold(path.project(), id).await?;
    let mut response = (StatusCode::CREATED, Json(result.redemption)).into_response();
    if result.replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(response)
}

/// Releases a quota hold: its quota is given back at once.
///
/// Releasing a released or expired hold changes nothing more; a confirmed
/// hold stays confirmed (cancel its redemption instead).
#[utoipa::path(
    post,
    path = "/campaign/api/projects/{projId}/holds/{id}/release",
    tag = "campaign",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = uuid::Uuid, Path, description = "Hold id"),
    ),
    responses(
        (status = 200, description = "The hold: `RELEASED` (or as it was, when it had ended before)", body = Hold),
        (status = 404, description = "No such hold (hold_not_found)", body = super::error::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["campaign.w"]))
)]
pub(crate) async fn release_hold<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Json<Hold>, ApiError> {
    let id = hold_id(&path)?;
    Ok(Json(api.campaigns.release_hold(path.project(), id).await?))
}
