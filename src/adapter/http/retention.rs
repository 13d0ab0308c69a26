//! Retention routes under `/consent/api/projects/{projId}/retention`: the
//! acceptances past their lifespan (scope `consent.audit`).

use axum::extract::State;
use axum::response::Response;

use super::campaign::page_response;
use super::error::ApiError;
use super::extract::{PathParams, QueryParams};
use super::{Api, HttpStore};
use crate::core::consent::history::ExpiredAcceptance;

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
    query.allow(&["page", "size"], |_| false)?;
    let (page, size) = query.paging()?;
    let expired = api
        .consent
        .expired_acceptances(path.project(), page, size)
        .await?;
    Ok(page_response(expired))
}
