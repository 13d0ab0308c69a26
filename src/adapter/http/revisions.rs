//! The campaign revision routes, under
//! `/campaign/api/projects/{projId}/campaigns/{id}/revisions`: list, read,
//! compare and restore the saved states of a campaign.

use axum::extract::State;
use axum::response::Response;
use axum::Json;

use super::auth::Principal;
use super::error::ApiError;
use super::extract::{path_uuid, PathParams, QueryParams};
use super::respond::page_response;
use super::{Api, HttpStore};
use crate::core::campaign::{Campaign, RevisionDiff, RevisionView};

fn campaign_id(path: &PathParams) -> Result<uuid::Uuid, ApiError> {
    path_uuid(
        path.get("id"),
        crate::ErrorCode::CampaignNotFound,
        "campaign",
    )
}

/// A revision number: a whole number from 1.
fn revision_number(name: &str, raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| ApiError::invalid_parameter(name, "expected a whole number from 1"))
}

/// Lists a campaign's revisions, newest first.
///
/// Every create, update and restore of a campaign saves a revision: its
/// number is the campaign's `version` after the save (the number a
/// redemption records as `campaignVersion`), with who saved it (the
/// token's `sub`), when, and `changes`, the RFC 6902 JSON Patch from the
/// revision before. A bare JSON array, one page of it; the total over all
/// pages is in `X-Total-Count`. The revisions of a deleted campaign stay
/// listed.
#[utoipa::path(
    get,
    path = "/campaign/api/projects/{projId}/campaigns/{id}/revisions",
    tag = "campaign admin",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = uuid::Uuid, Path, description = "Campaign id"),
        ("page" = Option<u32>, Query, description = "Zero-based page (default 0)"),
        ("size" = Option<u32>, Query, description = "Page size, 1 to 1000 (default 20)"),
    ),
    responses((status = 200, description = "A page of revisions, newest first; the total is in X-Total-Count", body = Vec<RevisionView>,
        headers(("X-Total-Count" = u64, description = "Number of revisions over all pages")))),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn list_revisions<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let (page, size) = query.only_paging()?;
    let id = campaign_id(&path)?;
    Ok(page_response(
        api.campaigns
            .campaign_revisions(path.project(), id, page, size)
            .await?,
    ))
}

/// One revision of a campaign: the whole campaign as saved.
///
/// With who saved it, when, and `changes` (the JSON Patch from the revision
/// before). An unknown number is 404 `campaign_revision_not_found`.
#[utoipa::path(
    get,
    path = "/campaign/api/projects/{projId}/campaigns/{id}/revisions/{revision}",
    tag = "campaign admin",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = uuid::Uuid, Path, description = "Campaign id"),
        ("revision" = i64, Path, description = "Revision number, from 1"),
    ),
    responses((status = 200, description = "The revision, with the campaign as saved", body = RevisionView)),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn get_revision<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Json<RevisionView>, ApiError> {
    let id = campaign_id(&path)?;
    let revision = revision_number("revision", path.get("revision"))?;
    Ok(Json(
        api.campaigns
            .campaign_revision(path.project(), id, revision)
            .await?,
    ))
}

/// The difference between two revisions of a campaign, as a JSON Patch.
///
/// `changes` is the RFC 6902 JSON Patch (`add`, `remove`, `replace`, each
/// with a JSON Pointer `path`) that turns revision `from` into revision
/// `to`; `remove` and `replace` also carry `oldValue`, the value before.
/// The bookkeeping fields (`version`, `active`, `lastModifiedBy`,
/// `lastModifiedDate`) are left out. Either revision may be the older.
#[utoipa::path(
    get,
    path = "/campaign/api/projects/{projId}/campaigns/{id}/revisions/diff",
    tag = "campaign admin",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = uuid::Uuid, Path, description = "Campaign id"),
        ("from" = i64, Query, description = "The revision the patch applies to"),
        ("to" = i64, Query, description = "The revision the patch produces"),
    ),
    responses((status = 200, description = "The JSON Patch from one revision to the other", body = RevisionDiff)),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn diff_revisions<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Json<RevisionDiff>, ApiError> {
    query.allow(&["from", "to"], |_| false)?;
    let id = campaign_id(&path)?;
    let number = |name: &str| match query.one(name)? {
        Some(raw) => revision_number(name, raw),
        None => Err(ApiError::invalid_parameter(name, "required")),
    };
    let (from, to) = (number("from")?, number("to")?);
    Ok(Json(
        api.campaigns
            .campaign_revision_diff(path.project(), id, from, to)
            .await?,
    ))
}

/// Restores a revision: saves its content as the campaign's next version.
///
/// The campaign gets a new revision equal to the old one (bookkeeping
/// aside); nothing is rewritten, so the restore itself shows in the list.
/// The content is validated again as on every update (422 when rules that
/// were valid then are not now) and its refCode must still be free (409).
/// With `version`, the campaign must still be at that version, else 409
/// `stale_version`; without it the last writer wins, as on update. A
/// deleted campaign is not restored (404).
#[utoipa::path(
    post,
    path = "/campaign/api/projects/{projId}/campaigns/{id}/revisions/{revision}/restore",
    tag = "campaign admin",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = uuid::Uuid, Path, description = "Campaign id"),
        ("revision" = i64, Path, description = "The revision to restore, from 1"),
        ("version" = Option<i64>, Query, description = "The campaign's current version as the client last read it (optimistic concurrency)"),
    ),
    responses(
        (status = 200, description = "The campaign as restored, at its new version", body = Campaign),
        (status = 409, description = "Stale version (stale_version) or duplicate refCode (duplicate_ref_code)", body = super::error::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn restore_revision<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
    principal: Principal,
) -> Result<Json<Campaign>, ApiError> {
    query.allow(&["version"], |_| false)?;
    let id = campaign_id(&path)?;
    let revision = revision_number("revision", path.get("revision"))?;
    let version = query
        .one("version")?
        .map(|v| revision_number("version", v))
        .transpose()?;
    Ok(Json(
        api.campaigns
            .restore_campaign_revision(path.project(), id, revision, version, &principal.sub)
            .await?,
    ))
}
