//! Retention routes under `/consent/api/projects/{projId}/retention`: the
//! acceptances past their lifespan (scope `consent.audit`) and the purge of
//! those that ended longer ago than the configured retention (scope
//! `consent.admin`).

use axum::extract::State;
use axum::response::Response;
use axum::Json;

use super::error::ApiError;
use super::extract::{PathParams, QueryParams};
use super::respond::page_response;
use super::{Api, HttpStore};
use crate::core::consent::history::{ExpiredAcceptance, PurgeReport};

/// Acceptances past their lifespan.
///
/// Every acceptance of the project whose `expiredDate` passed while it was
/// accepted (its history has an `EXPIRED` event), oldest expiry first:
/// what a retention review starts from. Erased subjects appear under their
/// pseudonym.
#[utoipa::path(
    get,
    path = "/consent/api/projects/{projId}/retention/expired",
    tag = "consent evidence",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("page" = Option<u32>, Query, description = "Zero-based page (default 0)"),
        ("size" = Option<u32>, Query, description = "Page size, 1 to 1000 (default 20)"),
    ),
    responses((status = 200, description = "A page of acceptances past their lifespan",
        body = Vec<ExpiredAcceptance>,
        headers(("X-Total-Count" = u64, description = "Number of acceptances past their lifespan")))),
    security(("bearer" = ["consent.audit"]))
)]
pub(crate) async fn expired_acceptances<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let (page, size) = query.only_paging()?;
    let expired = api
        .consent
        .expired_acceptances(path.project(), page, size)
        .await?;
    Ok(page_response(expired))
}

/// Purge acceptances past the retention period.
///
/// Removes the personal data of every acceptance of the project that
/// ended (withdrawn, or expired while accepted) longer ago than the
/// server's retention: the data subject becomes its keyed pseudonym, the
/// device context and note are emptied, the ledger salts deleted; what
/// proves the consent existed is kept and the ledger still verifies. 409
/// `retention_not_configured` without a retention, `erasure_not_configured`
/// without a pseudonym key.
#[utoipa::path(
    post,
    path = "/consent/api/projects/{projId}/retention/purge",
    tag = "consent evidence",
    params(("projId" = String, Path, description = "Project id")),
    responses(
        (status = 200, description = "What was purged", body = PurgeReport),
        (status = 409, description = "The server has no retention period (retention_not_configured) or no pseudonym key (erasure_not_configured); nothing purged", body = super::error::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["consent.admin"]))
)]
pub(crate) async fn purge<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Json<PurgeReport>, ApiError> {
    query.allow(&[], |_| false)?;
    Ok(Json(api.consent.purge_retention(path.project()).await?))
}
