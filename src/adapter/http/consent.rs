//! The six application-facing consent routes, under
//! `/bff/api/consent/projects/{projId}`, exactly as the consent
//! specification names them: reads need `consent.r`, writes `consent.w`
//! and `consent.r`; the three creates answer 201.
//!
//! `dataSubject` travels in the query of the two reads: the request log
//! writes the route template only, never the query (see `ops`).

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::auth::Principal;
use super::error::ApiError;
use super::extract::{JsonBody, PathParams, QueryParams};
use super::respond::{list_response, percent_encode};
use super::{Api, HttpStore};
use crate::core::consent::{
    AcceptConsentRequest, ConsentAcceptance, PrivacyNotice, PurposeAcceptance, PurposeOption,
    PurposeRequest, ToAccept,
};

/// `app` and `dataSubject`, both required, nothing else.
fn subject_query(query: &QueryParams) -> Result<(String, String), ApiError> {
    query.allow(&["app", "dataSubject"], |_| false)?;
    let required = |name: &str| {
        query
            .one(name)?
            .map(str::to_owned)
            .ok_or_else(|| ApiError::invalid_parameter(name, "required"))
    };
    Ok((required("app")?, required("dataSubject")?))
}

/// The consents of an application that the data subject still has to
/// accept (never accepted, withdrawn, expired, or of an older revision;
/// `reason` says which).
///
/// Only `PUBLISHED` consents of `app` are offered. A consent drops off the
/// list once the subject has an unexpired `ACCEPTED` acceptance of its
/// current revision; publishing a new revision offers it again. The list
/// is a bare JSON array, its length in `X-Total-Count`.
#[utoipa::path(
    get,
    path = "/bff/api/consent/projects/{projId}/to-accept",
    tag = "consent",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("app" = String, Query, description = "Application needing consent", example = "demo-app"),
        ("dataSubject" = String, Query, description = "User identifier in the application", example = "u1"),
    ),
    responses((status = 200, description = "The consents still to accept", body = Vec<ToAccept>,
        headers(("X-Total-Count" = u64, description = "Number of entries")))),
    security(("bearer" = ["consent.r"]))
)]
pub(crate) async fn to_accept<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let (app, subject) = subject_query(&query)?;
    let list = api
        .consent
        .to_accept(path.project(), &app, &subject)
        .await?;
    Ok(list_response(list))
}

/// One privacy notice.
///
/// Only a `PUBLISHED` notice is returned; any other id of the project,
/// draft or archived notices included, is 404 `privacy_notice_not_found`.
#[utoipa::path(
    get,
    path = "/bff/api/consent/projects/{projId}/privacy-notice/{id}",
    tag = "consent",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = String, Path, description = "Privacy notice id"),
    ),
    responses((status = 200, description = "The privacy notice", body = PrivacyNotice)),
    security(("bearer" = ["consent.r"]))
)]
pub(crate) async fn privacy_notice<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Json<PrivacyNotice>, ApiError> {
    Ok(Json(
        api.consent
            .privacy_notice(path.project(), path.get("id"))
            .await?,
    ))
}

/// Records a data subject's acceptance of a consent, with the device and
/// context details.
///
/// The consent must be a `PUBLISHED` consent of `app` (404 or 422
/// otherwise); `purposes` must be a subset of its purposes (omitted: all of
/// them). The acceptance pins the consent revision and the privacy notice
/// shown, and expires `lifespan` days after acceptance (`expiredDate` null:
/// never). History is append-only: every acceptance is a new record.
///
/// When the server signs consent receipts, the `Consent-Receipt-Id` header
/// names the acceptance's receipt (`{id}.{version}`), and `Link` its
/// address (`rel="receipt"`, scope `consent.r`).
#[utoipa::path(
    post,
    path = "/bff/api/consent/projects/{projId}/consent-acceptance",
    tag = "consent",
    params(("projId" = String, Path, description = "Project id")),
    request_body(content = AcceptConsentRequest, content_type = "application/json"),
    responses((status = 201, description = "Recorded, status ACCEPTED", body = ConsentAcceptance,
        headers(
            ("Consent-Receipt-Id" = String, description = "The id of the acceptance's signed receipt, `{id}.{version}`, when the server signs receipts"),
            ("Link" = String, description = "`</consent/api/projects/{projId}/receipts/{id}?version=1>; rel=\"receipt\"`, when the server signs receipts"),
        ))),
    security(("bearer" = ["consent.w", "consent.r"]))
)]
pub(crate) async fn accept_consent<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    principal: Principal,
    JsonBody(request): JsonBody<AcceptConsentRequest>,
) -> Result<Response, ApiError> {
    let acceptance = api
        .consent
        .accept_consent(path.project(), request, &principal.sub)
        .await?;
    // A new acceptance is version 1, and its ledger entry was written with
    // it: its receipt exists as soon as it is recorded.
    let id = acceptance.id.clone();
    let mut res = (StatusCode::CREATED, Json(acceptance)).into_response();
    name_receipt(&api, path.project(), &id, &mut res);
    Ok(res)
}

/// When the server signs receipts, names the receipt of record `id`
/// (version 1: a new acceptance, or a purpose event) in the
/// `Consent-Receipt-Id` and `Link` headers of `res`.
fn name_receipt<S: HttpStore>(api: &Api<S>, project: &str, id: &str, res: &mut Response) {
    if api.receipts.is_none() {
        return;
    }
    let link = format!(
        "</consent/api/projects/{}/receipts/{}?version=1>; rel=\"receipt\"",
        percent_encode(project),
        percent_encode(id)
    );
    for (name, value) in [("consent-receipt-id", format!("{id}.1")), ("link", link)] {
        if let Ok(v) = HeaderValue::from_str(&value) {
            res.headers_mut().insert(HeaderName::from_static(name), v);
        }
    }
}

/// The purposes of an application with the data subject's flags.
///
/// One entry per purpose code of each `PUBLISHED` consent of `app`.
/// `accepted` is true when the latest event for that purpose (a purpose
/// acceptance or withdrawal, or a consent acceptance listing it) is an
/// unexpired acceptance. Names come from the purpose catalogue
/// (`svc-purpose-v1`), empty strings when it has none.
#[utoipa::path(
    get,
    path = "/bff/api/consent/projects/{projId}/purpose-options",
    tag = "consent",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("app" = String, Query, description = "Application", example = "demo-app"),
        ("dataSubject" = String, Query, description = "User identifier in the application", example = "u1"),
    ),
    responses((status = 200, description = "One option per purpose", body = Vec<PurposeOption>,
        headers(("X-Total-Count" = u64, description = "Number of entries")))),
    security(("bearer" = ["consent.r"]))
)]
pub(crate) async fn purpose_options<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let (app, subject) = subject_query(&query)?;
    let list = api
        .consent
        .purpose_options(path.project(), &app, &subject)
        .await?;
    Ok(list_response(list))
}

/// Records the acceptance of one purpose.
///
/// `purposeCode` must be a purpose of a `PUBLISHED` consent of `app` (404
/// otherwise); the acceptance expires after that consent's lifespan. When
/// the server signs receipts, `Consent-Receipt-Id` and `Link` name the
/// event's receipt.
#[utoipa::path(
    post,
    path = "/bff/api/consent/projects/{projId}/purpose-acceptance",
    tag = "consent",
    params(("projId" = String, Path, description = "Project id")),
    request_body(content = PurposeRequest, content_type = "application/json",
        example = json!({"app": "demo-app", "dataSubject": "u1", "purposeCode": "analytics"})),
    responses((status = 201, description = "Recorded, status ACCEPTED", body = PurposeAcceptance,
        headers(
            ("Consent-Receipt-Id" = String, description = "The id of the event's signed receipt, `{id}.1`, when the server signs receipts"),
            ("Link" = String, description = "`</consent/api/projects/{projId}/receipts/{id}?version=1>; rel=\"receipt\"`, when the server signs receipts"),
        ))),
    security(("bearer" = ["consent.w", "consent.r"]))
)]
pub(crate) async fn accept_purpose<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    JsonBody(request): JsonBody<PurposeRequest>,
) -> Result<Response, ApiError> {
    let accepted = api.consent.accept_purpose(path.project(), request).await?;
    let id = accepted.id.clone();
    let mut res = (StatusCode::CREATED, Json(accepted)).into_response();
    name_receipt(&api, path.project(), &id, &mut res);
    Ok(res)
}

/// Records the withdrawal of one purpose: always possible, idempotent.
///
/// Withdrawing is never refused for lack of a prior acceptance. The record
/// keeps the dates of the previous acceptance (null when none) and sets
/// `withdrawalDate`. An unknown purpose code is 404. When the server signs
/// receipts, `Consent-Receipt-Id` and `Link` name the event's receipt.
#[utoipa::path(
    post,
    path = "/bff/api/consent/projects/{projId}/purpose-withdrawal",
    tag = "consent",
    params(("projId" = String, Path, description = "Project id")),
    request_body(content = PurposeRequest, content_type = "application/json",
        example = json!({"app": "demo-app", "dataSubject": "u1", "purposeCode": "analytics"})),
    responses((status = 200, description = "Recorded, status WITHDRAWN, withdrawalDate set", body = PurposeAcceptance,
        headers(
            ("Consent-Receipt-Id" = String, description = "The id of the event's signed receipt, `{id}.1`, when the server signs receipts"),
            ("Link" = String, description = "`</consent/api/projects/{projId}/receipts/{id}?version=1>; rel=\"receipt\"`, when the server signs receipts"),
        ))),
    security(("bearer" = ["consent.w", "consent.r"]))
)]
pub(crate) async fn withdraw_purpose<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    JsonBody(request): JsonBody<PurposeRequest>,
) -> Result<Response, ApiError> {
    let withdrawn = api
        .consent
        .withdraw_purpose(path.project(), request)
        .await?;
    let id = withdrawn.id.clone();
    let mut res = Json(withdrawn).into_response();
    name_receipt(&api, path.project(), &id, &mut res);
    Ok(res)
}
