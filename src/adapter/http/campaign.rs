//! The campaign routes, under `/campaign/api/projects/{projId}`: search,
//! redeem, cancel, redemption list, campaign administration, quota usage.
//!
//! Each handler parses (problems for bad input), calls
//! [`CampaignService`](crate::core::campaign::CampaignService) and shapes the
//! response; nothing here decides anything about campaigns.

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use serde_json::json;
use tracing::Instrument as _;

use super::auth::{scope, Principal};
use super::error::ApiError;
use super::extract::{path_uuid, JsonBody, MountPrefix, PathParams, QueryParams};
use super::respond::{page_response, percent_encode};
use super::{Api, HttpStore};
use crate::core::campaign::{
    Campaign, CampaignInput, CampaignStatus, QuotaUsage, RedeemRequest, Redemption, SearchRequest,
    SearchResponse,
};
use crate::service::campaign::{QuotaUsageQuery, SearchOptions, DEFAULT_QUOTA_PAGE_SIZE};
use crate::store::{CampaignQuery, CampaignSort, RedemptionQuery, SortDirection};

/// The example body of a campaign create or replace (OpenAPI).
fn campaign_example() -> serde_json::Value {
    json!({
        "name": "5% off shoes", "refCode": "SHOES5", "status": "ENABLE", "priority": 1,
        "startDate": "2026-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "quotas": [{"key": "${campaignCode}-${userId}", "value": 1, "description": "once per user"}],
        "rules": [{
            "name": "Shoes in the cart",
            "when": [{"match": "ALL", "conditions": [
                {"type": "cartItem", "attribute": "tags", "op": "contains", "value": "shoes", "valueType": "STRING"}
            ]}],
            "thenOperator": "AND",
            "then": [{"action": "CART_DISCOUNT", "internalAction": false,
                      "data": [{"attribute": "amount", "value": "floor(${totalPrice} * 0.05)", "isFormula": true}]}]
        }]
    })
}

fn campaign_id(path: &PathParams) -> Result<uuid::Uuid, ApiError> {
    path_uuid(
        path.get("id"),
        crate::ErrorCode::CampaignNotFound,
        "campaign",
    )
}

/// Matches campaigns and attributes: the benefits that apply.
///
/// `explain` and `at` show how campaigns are built and what runs in the
/// future (a promo code's pattern, say), so they also need
/// `campaign.admin`.
#[utoipa::path(
    post,
    path = "/campaign/api/projects/{projId}/search",
    tag = "campaign",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("explain" = Option<bool>, Query, description = "Add, per running campaign that did not fire, why (needs campaign.admin too)"),
        ("at" = Option<DateTime<Utc>>, Query, description = "Evaluate at this RFC 3339 instant instead of now: a preview (needs campaign.admin too)"),
    ),
    request_body(content = SearchRequest, content_type = "application/json",
        example = json!({"attribute": {"userId": "u1", "promoCode": "WELCOME50"},
            "cart": {"totalPrice": 1500, "currency": "THB",
                     "items": [{"sku": "A1", "name": "Shoes", "amount": 1, "price": 1500, "tags": ["shoes"]}]}})),
    responses((status = 200, description = "One action per matched benefit, in priority order", body = SearchResponse)),
    security(("bearer" = ["campaign.r"]))
)]
pub(crate) async fn search<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    principal: Principal,
    query: QueryParams,
    JsonBody(request): JsonBody<SearchRequest>,
) -> Result<Response, ApiError> {
    query.allow(&["explain", "at"], |_| false)?;
    let explain = query.flag("explain")?;
    let at = query
        .one("at")?
        .map(|v| {
            DateTime::parse_from_rfc3339(v)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| ApiError::invalid_parameter("at", "expected an RFC 3339 timestamp"))
        })
        .transpose()?;
    if explain || at.is_some() {
        principal.require(&[scope::CAMPAIGN_ADMIN])?;
    }
    let options = SearchOptions { explain, at };
    let traced = super::otel::operation("campaign.search");
    let found = api
        .campaigns
        .search(path.project(), &request, &options)
        .instrument(traced.clone())
        .await;
    let outcome = match &found {
        Ok(f) if f.actions.is_empty() => "none",
        Ok(_) => "matched",
        Err(e) => e.code(),
    };
    api.metrics.search(outcome);
    super::otel::record_outcome(&traced, outcome);
    json_response(&found?, SEARCH_RESPONSE_CAPACITY)
}

/// Room for a search response of a dozen actions (about 500 bytes each).
const SEARCH_RESPONSE_CAPACITY: usize = 8 * 1024;

/// `value` as an `application/json` response, written into one buffer of
/// `capacity` bytes to start with. Search answers are the hot path: axum's
/// `Json` starts from 128 bytes and writes each token through `BytesMut`,
/// which cost as much as the serialisation itself; the bytes are the same.
fn json_response<T: serde::Serialize>(value: &T, capacity: usize) -> Result<Response, ApiError> {
    let mut body = Vec::with_capacity(capacity);
    serde_json::to_writer(&mut body, value)
        .map_err(|e| crate::Error::internal(format!("cannot write a response: {e}")))?;
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response())
}

/// Redeems a campaign by its reference code: re-evaluates it, charges every
/// quota and records the redemption, atomically.
///
/// `Idempotency-Key` (header, or `idempotencyKey` in the body; the header
/// wins; scoped to the project): a key already recorded for the same
/// request returns the stored redemption with 201, as the original did,
/// and `Idempotent-Replayed: true`, charging nothing; the key with another
/// request body is 422 `idempotency_key_reused`.
#[utoipa::path(
    post,
    path = "/campaign/api/projects/{projId}/redeem/campaign-code",
    tag = "campaign",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Makes the redeem safe to retry; overrides the body's idempotencyKey"),
    ),
    request_body(content = RedeemRequest, content_type = "application/json",
        example = json!({"campaignCode": "CART10", "attribute": {"userId": "u1"},
            "cart": {"totalPrice": 1500, "currency": "THB"}})),
    responses(
        (status = 201, description = "Recorded; or, with `Idempotent-Replayed: true`, the replay of an idempotency key: the stored redemption, nothing charged", body = Redemption,
            headers(("Idempotent-Replayed" = String, description = "`true` on a replay of an idempotency key"))),
        (status = 422, description = "Invalid request, or the idempotency key was used for another request (idempotency_key_reused)", body = super::error::Problem, content_type = "application/problem+json"),
        (status = 409, description = "A quota would be exceeded (quota_exceeded); nothing recorded", body = super::error::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["campaign.w"]))
)]
pub(crate) async fn redeem<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    headers: HeaderMap,
    JsonBody(mut request): JsonBody<RedeemRequest>,
) -> Result<Response, ApiError> {
    if let Some(value) = headers.get("idempotency-key") {
        let key = value
            .to_str()
            .map_err(|_| ApiError::invalid_parameter("Idempotency-Key", "must be visible ASCII"))?;
        request.idempotency_key = Some(key.to_owned());
    }
    // Validated once, here; the service and the engine read the typed
    // request and never check it again.
    let traced = super::otel::operation("campaign.redeem");
    let result = match crate::core::engine::ParsedRedeem::parse(&request) {
        Ok(parsed) => {
            api.campaigns
                .redeem_parsed(path.project(), &parsed)
                .instrument(traced.clone())
                .await
        }
        Err(e) => Err(e),
    };
    let outcome = match &result {
        Ok(r) if r.replayed => "replayed",
        Ok(_) => "redeemed",
        Err(e) => e.code(),
    };
    api.metrics.redeem(outcome);
    super::otel::record_outcome(&traced, outcome);
    let result = result?;
    // A replay answers as the original did (201, the stored redemption),
    // marked with `Idempotent-Replayed: true`.
    let mut response = (StatusCode::CREATED, Json(result.redemption)).into_response();
    if result.replayed {
        response.headers_mut().insert(
            "idempotent-replayed",
            axum::http::HeaderValue::from_static("true"),
        );
    }
    Ok(response)
}

/// Cancels a redemption: its transactions become `CANCELLED` and its quota
/// is given back. Cancelling twice changes nothing.
///
/// For refunds and abandoned orders. The quota usage of every key the
/// redemption charged goes down by what it charged, in one atomic store
/// operation; an unknown id is 404 `redemption_not_found`.
#[utoipa::path(
    post,
    path = "/campaign/api/projects/{projId}/redemptions/{id}/cancel",
    tag = "campaign",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = uuid::Uuid, Path, description = "Redemption id"),
    ),
    responses((status = 200, description = "The cancelled redemption", body = Redemption)),
    security(("bearer" = ["campaign.w"]))
)]
pub(crate) async fn cancel_redemption<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Json<Redemption>, ApiError> {
    let id = path_uuid(
        path.get("id"),
        crate::ErrorCode::RedemptionNotFound,
        "redemption",
    )?;
    Ok(Json(
        api.campaigns.cancel_redemption(path.project(), id).await?,
    ))
}

/// Lists redemptions, newest first.
///
/// Filtered by campaign code and by `attribute.userId` of the redeem
/// request, both exact. A bare JSON array, one page of it; the total over
/// all pages is in `X-Total-Count`.
#[utoipa::path(
    get,
    path = "/campaign/api/projects/{projId}/redemptions",
    tag = "campaign",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("campaignCode" = Option<String>, Query, description = "Only redemptions of this campaign code"),
        ("userId" = Option<String>, Query, description = "Only redemptions whose attribute.userId is this"),
        ("page" = Option<u32>, Query, description = "Zero-based page (default 0)"),
        ("size" = Option<u32>, Query, description = "Page size, 1 to 1000 (default 20)"),
    ),
    responses((status = 200, description = "A page of redemptions; the total is in X-Total-Count", body = Vec<Redemption>,
        headers(("X-Total-Count" = u64, description = "Number of redemptions over all pages")))),
    security(("bearer" = ["campaign.r"]))
)]
pub(crate) async fn list_redemptions<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    query.allow(&["campaignCode", "userId", "page", "size"], |_| false)?;
    let (page, size) = query.paging()?;
    let q = RedemptionQuery {
        campaign_code: query.one("campaignCode")?.map(str::to_owned),
        user_id: query.one("userId")?.map(str::to_owned),
        page,
        size,
    };
    Ok(page_response(
        api.campaigns.list_redemptions(path.project(), &q).await?,
    ))
}

/// Parses `sort=field[,asc|desc]`.
fn parse_sort(value: &str) -> Result<(CampaignSort, SortDirection), ApiError> {
    let (field, dir) = value.split_once(',').unwrap_or((value, "asc"));
    let field = CampaignSort::parse(field.trim()).ok_or_else(|| {
        ApiError::invalid_parameter(
            "sort",
            format!(
                "unknown field {field:?}; expected name, refCode, priority, startDate, endDate, createdDate or lastModifiedDate"
            ),
        )
    })?;
    let dir = match dir.trim().to_ascii_lowercase().as_str() {
        "asc" => SortDirection::Asc,
        "desc" => SortDirection::Desc,
        _ => {
            return Err(ApiError::invalid_parameter(
                "sort",
                "direction must be asc or desc",
            ))
        }
    };
    Ok((field, dir))
}

/// Lists campaigns: `q` matches part of name, groupName or refCode.
///
/// Each campaign has `active` computed at the time of the call. A bare
/// JSON array, one page of it, the total over all pages in
/// `X-Total-Count`; sorted by `sort` (repeatable), then by `refCode`.
#[utoipa::path(
    get,
    path = "/campaign/api/projects/{projId}/campaigns",
    tag = "campaign admin",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("q" = Option<String>, Query, description = "Case-insensitive partial match on name, groupName, refCode or status"),
        ("status" = Option<CampaignStatus>, Query, description = "Only campaigns with this status"),
        ("page" = Option<u32>, Query, description = "Zero-based page (default 0)"),
        ("size" = Option<u32>, Query, description = "Page size, 1 to 1000 (default 20)"),
        ("sort" = Option<Vec<String>>, Query, explode = true, description = "field[,asc|desc], repeatable; fields: name, refCode, priority, startDate, endDate, createdDate, lastModifiedDate"),
    ),
    responses((status = 200, description = "A page of campaigns; the total is in X-Total-Count", body = Vec<Campaign>,
        headers(("X-Total-Count" = u64, description = "Number of campaigns over all pages")))),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn list_campaigns<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    query.allow(&["q", "status", "page", "size", "sort"], |_| false)?;
    let (page, size) = query.paging()?;
    let status = query
        .one("status")?
        .map(|s| {
            let status = CampaignStatus::parse(s);
            if status.is_known() {
                Ok(status)
            } else {
                Err(ApiError::invalid_parameter(
                    "status",
                    format!("expected one of {}", CampaignStatus::expected()),
                ))
            }
        })
        .transpose()?;
    let sort = query
        .all("sort")
        .into_iter()
        .map(parse_sort)
        .collect::<Result<Vec<_>, _>>()?;
    let q = CampaignQuery {
        q: query.one("q")?.filter(|q| !q.is_empty()).map(str::to_owned),
        status,
        page,
        size,
        sort,
        ..CampaignQuery::default()
    };
    Ok(page_response(
        api.campaigns.list_campaigns(path.project(), &q).await?,
    ))
}

/// Creates a campaign (version 1). Every problem of the input is reported
/// at once, each with its field path.
///
/// Conditions, formulas and quota keys are checked when the campaign is
/// saved (422 naming the field: an invalid pattern, an `in` list over 50
/// values, a formula that does not parse). Missing rule ids and
/// `actionRef`s are generated. `refCode` is unique in the project (409).
#[utoipa::path(
    post,
    path = "/campaign/api/projects/{projId}/campaigns",
    tag = "campaign admin",
    params(("projId" = String, Path, description = "Project id")),
    request_body(content = CampaignInput, content_type = "application/json", example = campaign_example),
    responses(
        (status = 201, description = "Created", body = Campaign,
            headers(("Location" = String, description = "Address of the new campaign"))),
        (status = 409, description = "A campaign with this refCode exists (duplicate_ref_code)", body = super::error::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn create_campaign<S: HttpStore>(
    State(api): State<Api<S>>,
    MountPrefix(prefix): MountPrefix,
    path: PathParams,
    principal: Principal,
    JsonBody(input): JsonBody<CampaignInput>,
) -> Result<Response, ApiError> {
    let project = path.project();
    let campaign = api
        .campaigns
        .create_campaign(project, input, &principal.sub)
        .await?;
    let location = format!(
        "{prefix}/campaign/api/projects/{}/campaigns/{}",
        percent_encode(project),
        campaign.id
    );
    let mut res = (StatusCode::CREATED, Json(campaign)).into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        res.headers_mut().insert(header::LOCATION, v);
    }
    Ok(res)
}

/// One campaign.
///
/// With `active` computed at the time of the call; an id unknown in the
/// project is 404 `campaign_not_found`.
#[utoipa::path(
    get,
    path = "/campaign/api/projects/{projId}/campaigns/{id}",
    tag = "campaign admin",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = uuid::Uuid, Path, description = "Campaign id"),
    ),
    responses((status = 200, description = "The campaign, with active computed now", body = Campaign)),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn get_campaign<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Json<Campaign>, ApiError> {
    let id = campaign_id(&path)?;
    Ok(Json(api.campaigns.campaign(path.project(), id).await?))
}

/// Replaces a campaign; its version increases by one. A body naming a
/// `version` other than the stored one gets 409 `stale_version`.
///
/// The body is a whole campaign, checked as on create; without `version`
/// the last writer wins. Redemptions already recorded keep the version
/// they were evaluated against.
#[utoipa::path(
    put,
    path = "/campaign/api/projects/{projId}/campaigns/{id}",
    tag = "campaign admin",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = uuid::Uuid, Path, description = "Campaign id"),
    ),
    request_body(content = CampaignInput, content_type = "application/json", example = campaign_example),
    responses(
        (status = 200, description = "The updated campaign", body = Campaign),
        (status = 409, description = "Stale version (stale_version) or duplicate refCode (duplicate_ref_code)", body = super::error::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn update_campaign<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    principal: Principal,
    JsonBody(input): JsonBody<CampaignInput>,
) -> Result<Json<Campaign>, ApiError> {
    let id = campaign_id(&path)?;
    Ok(Json(
        api.campaigns
            .update_campaign(path.project(), id, input, &principal.sub)
            .await?,
    ))
}

/// Deletes a campaign. Its redemptions and quota usage stay.
///
/// The redemptions remain listed and cancellable; a quota key shared with
/// other campaigns keeps counting their usage. An unknown id is 404.
#[utoipa::path(
    delete,
    path = "/campaign/api/projects/{projId}/campaigns/{id}",
    tag = "campaign admin",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = uuid::Uuid, Path, description = "Campaign id"),
    ),
    responses((status = 204, description = "Deleted")),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn delete_campaign<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<StatusCode, ApiError> {
    let id = campaign_id(&path)?;
    api.campaigns.delete_campaign(path.project(), id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Usage of every quota key that can refuse the campaign's redeems.
///
/// One entry per stored key that a quota of the campaign can render now
/// (its `campaignCode`, `campaignId`, channel and the current date in
/// place, any value for the names a request gives, such as `userId`),
/// charged by this or any other campaign, and every key its quotas render
/// without a request even if nobody charged it (`used` 0). Sorted by key
/// (bytewise). `used` sums the amounts of `COMPLETE` redemptions charged
/// to the key by every campaign sharing it; `limit` is the smallest limit
/// of the campaign's quotas that render it. Paged by key: at most `size`
/// entries after the key `after`; when more may follow, a
/// `Link: <?after=…&size=…>; rel="next"` header names the next page, which
/// a page may announce even when it holds fewer than `size` entries.
///
/// With `legacy=true`, the stored keys that the campaign's quotas rendered
/// before substituted values were escaped, and no longer render, each with
/// its usage and the limit of the quota that rendered it then: usage
/// counted by an earlier version that limits nothing now (the migration
/// check of docs/quotas.md).
#[utoipa::path(
    get,
    path = "/campaign/api/projects/{projId}/campaigns/{id}/quotas",
    tag = "campaign admin",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = uuid::Uuid, Path, description = "Campaign id"),
        ("after" = Option<String>, Query, description = "Only keys after this one (bytewise): the `after` of the previous page's `Link: rel=\"next\"`"),
        ("size" = Option<u32>, Query, description = "At most this many keys, 1 to 1000 (default 100)"),
        ("legacy" = Option<bool>, Query, description = "Instead, the stored keys the campaign's quotas rendered before values were escaped (plain substitution) that they no longer render: usage that limits nothing now (default false)"),
    ),
    responses((status = 200, description = "One entry per quota key, sorted by key", body = Vec<QuotaUsage>,
        headers(("Link" = String, description = "`<?after=…&size=…>; rel=\"next\"` when another page may follow")))),
    security(("bearer" = ["campaign.admin"]))
)]
pub(crate) async fn quota_usage<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    query.allow(&["after", "size", "legacy"], |_| false)?;
    let id = campaign_id(&path)?;
    let size = query.number("size")?.unwrap_or(DEFAULT_QUOTA_PAGE_SIZE);
    if size == 0 || size > crate::store::MAX_PAGE_SIZE {
        return Err(ApiError::invalid_parameter(
            "size",
            format!("expected 1 to {}", crate::store::MAX_PAGE_SIZE),
        ));
    }
    let q = QuotaUsageQuery {
        after: query.one("after")?.map(str::to_owned),
        size,
        legacy: query.flag("legacy")?,
    };
    let page = api.campaigns.quota_usage(path.project(), id, &q).await?;
    let mut res = Json(page.items).into_response();
    if let Some(next) = page.next {
        let link = format!(
            "<?after={}&size={size}>; rel=\"next\"",
            percent_encode(&next)
        );
        if let Ok(v) = HeaderValue::from_str(&link) {
            res.headers_mut().insert(header::LINK, v);
        }
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_values() {
        assert_eq!(
            parse_sort("name").unwrap(),
            (CampaignSort::Name, SortDirection::Asc)
        );
        assert_eq!(
            parse_sort("priority,DESC").unwrap(),
            (CampaignSort::Priority, SortDirection::Desc)
        );
        assert!(parse_sort("password").is_err());
        assert!(parse_sort("name,up").is_err());
    }

    #[test]
    fn location_segments_are_encoded() {
        assert_eq!(percent_encode("demo"), "demo");
        assert_eq!(percent_encode("a b/é"), "a%20b%2F%C3%A9");
    }
}
