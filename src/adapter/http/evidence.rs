//! Consent evidence routes: a data subject's history and state at an
//! instant under `/consent/api/projects/{projId}/subjects`, the consent
//! ledger and its check under `…/ledger` (scope `consent.audit`), and the revision history of content records under
//! `/cms/api/projects/{projId}/c/{type}/{id}/versions` (scope `cms.r`).
//!
//! `dataSubject` travels in the query: the request log writes the route
//! template only, never the query (see `ops`).

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::content::ContentTypeName;
use super::error::ApiError;
use super::extract::{JsonBody, PathParams, QueryParams};
use super::respond::{list_response, page_response};
use super::{Api, HttpStore};
use crate::core::consent::erasure::ErasureReport;
use crate::core::consent::evidence::{HistoryQuery, SubjectEvent};
use crate::core::consent::ledger::LedgerReport;
use crate::core::consent::receipt::{self, ConsentReceipt, EntryRef};
use crate::core::consent::{ContentRecord, Envelope, SubjectState};
use crate::core::error::ErrorCode;
use crate::service::consent::{ReceiptSource, SubjectExport};

/// One stored version of a content record: its number beside the
/// content-store envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionEnvelope {
    /// The version: 1 on creation, +1 on every replace.
    pub version: i64,
    /// The record as this version stored it.
    #[serde(flatten)]
    pub envelope: Envelope,
}

impl From<&ContentRecord> for VersionEnvelope {
    fn from(r: &ContentRecord) -> Self {
        VersionEnvelope {
            version: r.version,
            envelope: r.envelope(),
        }
    }
}

/// An RFC 3339 instant of the query (a `+` sent unencoded arrives as a
/// space and is read as `+`).
fn instant(query: &QueryParams, name: &str) -> Result<Option<DateTime<Utc>>, ApiError> {
    let Some(text) = query.one(name)? else {
        return Ok(None);
    };
    let parse = |t: &str| DateTime::parse_from_rfc3339(t).ok();
    parse(text)
        .or_else(|| parse(&text.replace(' ', "+")))
        .map(|t| Some(crate::core::clock::truncate_micros(t.with_timezone(&Utc))))
        .ok_or_else(|| {
            ApiError::invalid_parameter(
                name,
                "expected an RFC 3339 timestamp, such as 2026-01-01T00:00:00Z",
            )
        })
}

fn required<'a>(query: &'a QueryParams, name: &str) -> Result<&'a str, ApiError> {
    query
        .one(name)?
        .ok_or_else(|| ApiError::invalid_parameter(name, "required"))
}

/// A data subject's consent history.
///
/// Every event, oldest first: acceptances,
/// withdrawals, edits, purpose acceptances and withdrawals, expiries and
/// re-consent requests (a new revision of the consent or of its privacy
/// notice), each with the consent and notice revisions pinned and the
/// device context.
#[utoipa::path(
    get,
    path = "/consent/api/projects/{projId}/subjects/history",
    tag = "consent evidence",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("dataSubject" = String, Query, description = "The data subject", example = "u1"),
        ("app" = Option<String>, Query, description = "Only events of this application"),
        ("consentId" = Option<String>, Query, description = "Only events of this consent"),
        ("from" = Option<DateTime<Utc>>, Query, description = "Only events at or after this instant"),
        ("to" = Option<DateTime<Utc>>, Query, description = "Only events before this instant"),
        ("page" = Option<u32>, Query, description = "Zero-based page (default 0)"),
        ("size" = Option<u32>, Query, description = "Page size, 1 to 1000 (default 20)"),
    ),
    responses((status = 200, description = "A page of events", body = Vec<SubjectEvent>,
        headers(("X-Total-Count" = u64, description = "Number of matching events")))),
    security(("bearer" = ["consent.audit"]))
)]
pub(crate) async fn subject_history<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    query.allow(
        &[
            "dataSubject",
            "app",
            "consentId",
            "from",
            "to",
            "page",
            "size",
        ],
        |_| false,
    )?;
    let subject = required(&query, "dataSubject")?;
    let (page, size) = query.paging()?;
    let history = HistoryQuery {
        app: query.one("app")?.map(str::to_owned),
        consent_id: query.one("consentId")?.map(str::to_owned),
        from: instant(&query, "from")?,
        to: instant(&query, "to")?,
        page,
        size,
    };
    let events = api
        .consent
        .subject_history(path.project(), subject, &history)
        .await?;
    Ok(page_response(events))
}

/// A data subject's consent state at an instant.
///
/// What a data subject had agreed to at an instant (default: now), per
/// consent (with the revision and notice accepted) and per purpose (with
/// the record that granted it): in one application, or in every
/// application their records name.
#[utoipa::path(
    get,
    path = "/consent/api/projects/{projId}/subjects/state",
    tag = "consent evidence",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("dataSubject" = String, Query, description = "The data subject", example = "u1"),
        ("app" = Option<String>, Query, description = "One application (default: every application of the subject's records)"),
        ("at" = Option<DateTime<Utc>>, Query, description = "The instant (default: now)"),
    ),
    responses((status = 200, description = "One state per application", body = Vec<SubjectState>,
        headers(("X-Total-Count" = u64, description = "Number of applications")))),
    security(("bearer" = ["consent.audit"]))
)]
pub(crate) async fn subject_state<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    query.allow(&["dataSubject", "app", "at"], |_| false)?;
    let subject = required(&query, "dataSubject")?;
    let at = match instant(&query, "at")? {
        Some(at) => at,
        None => api.consent.now(),
    };
    let states = api
        .consent
        .subject_state(path.project(), subject, query.one("app")?, at)
        .await?;
    Ok(list_response(states))
}

/// Every stored version of a content record.
///
/// Oldest first: what a privacy notice
/// or consent said at each revision (and each edit).
#[utoipa::path(
    get,
    path = "/cms/api/projects/{projId}/c/{type}/{id}/versions",
    tag = "content store",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("type" = ContentTypeName, Path, description = "The content type"),
        ("id" = String, Path, description = "Content id"),
    ),
    responses((status = 200, description = "Every version", body = Vec<VersionEnvelope>,
        headers(("X-Total-Count" = u64, description = "Number of versions")))),
    security(("bearer" = ["cms.r"]))
)]
pub(crate) async fn content_versions<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Response, ApiError> {
    let versions = api
        .consent
        .content_versions(path.project(), path.get("type"), path.get("id"))
        .await?;
    Ok(list_response(
        versions.iter().map(VersionEnvelope::from).collect(),
    ))
}

/// One stored version of a content record.
///
/// The version with the number given in the path, exactly as it was stored:
/// what a privacy notice or consent said at that revision or edit.
#[utoipa::path(
    get,
    path = "/cms/api/projects/{projId}/c/{type}/{id}/versions/{version}",
    tag = "content store",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("type" = ContentTypeName, Path, description = "The content type"),
        ("id" = String, Path, description = "Content id"),
        ("version" = i64, Path, description = "Version number, from 1"),
    ),
    responses((status = 200, description = "The version", body = VersionEnvelope)),
    security(("bearer" = ["cms.r"]))
)]
pub(crate) async fn content_version<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Response, ApiError> {
    let version = path
        .get("version")
        .parse::<i64>()
        .ok()
        .filter(|v| *v >= 1)
        .ok_or_else(|| ApiError::invalid_parameter("version", "expected a whole number from 1"))?;
    let record = api
        .consent
        .content_version(path.project(), path.get("type"), path.get("id"), version)
        .await?;
    Ok(Json(VersionEnvelope::from(&record)).into_response())
}

/// Most entries one ledger page may hold.
const MAX_LEDGER_PAGE: u32 = 10_000;

/// The project's consent ledger, one page.
///
/// JSON Lines (`application/jsonl`): one
/// entry per line, exactly as stored, in position order, from after
/// position `after` (default 0), at most `limit` (1 to 10 000, default
/// 1000). The ledger's head is in `X-Ledger-Head-Position` and
/// `X-Ledger-Head-Hash` (absent while the ledger is empty). Save the pages
/// one after the other into a file and check it offline
/// (`accord ledger verify`, or `accord::consent::ledger::verify_jsonl`).
#[utoipa::path(
    get,
    path = "/consent/api/projects/{projId}/ledger",
    tag = "consent evidence",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("after" = Option<i64>, Query, minimum = 0, description = "Entries after this position (default 0)"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 10000, description = "At most this many entries, 1 to 10000 (default 1000)"),
    ),
    responses((status = 200, description = "Entries, one JSON object per line", content_type = "application/jsonl", body = String,
        headers(("X-Ledger-Head-Position" = i64, description = "Position of the ledger's last entry"),
            ("X-Ledger-Head-Hash" = String, description = "Hash of the ledger's last entry")))),
    security(("bearer" = ["consent.audit"]))
)]
pub(crate) async fn ledger<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    query.allow(&["after", "limit"], |_| false)?;
    let after = match query.one("after")? {
        None => 0,
        Some(v) => v.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
            ApiError::invalid_parameter("after", "expected a whole number from 0")
        })?,
    };
    let limit = query.number("limit")?.unwrap_or(1000);
    if limit == 0 || limit > MAX_LEDGER_PAGE {
        return Err(ApiError::invalid_parameter(
            "limit",
            format!("expected 1 to {MAX_LEDGER_PAGE}"),
        ));
    }
    let (entries, head) = api
        .consent
        .ledger_entries(path.project(), after, limit)
        .await?;
    let mut body = String::new();
    for e in entries {
        body.push_str(&e.text);
        body.push('\n');
    }
    let mut res = ([(header::CONTENT_TYPE, "application/jsonl")], body).into_response();
    if let Some(h) = head {
        let headers = res.headers_mut();
        headers.insert("x-ledger-head-position", HeaderValue::from(h.position));
        if let Ok(v) = HeaderValue::from_str(&h.hash) {
            headers.insert("x-ledger-head-hash", v);
        }
    }
    Ok(res)
}

/// Verifies the project's consent ledger.
///
/// Checks every entry's hash, every link to
/// the entry before, the positions, and the head. `valid`, or the first
/// entry that was changed, removed or reordered.
#[utoipa::path(
    get,
    path = "/consent/api/projects/{projId}/ledger/verify",
    tag = "consent evidence",
    params(("projId" = String, Path, description = "Project id")),
    responses((status = 200, description = "The result (a broken ledger is a 200 with valid false)", body = LedgerReport)),
    security(("bearer" = ["consent.audit"]))
)]
pub(crate) async fn verify_ledger<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Json<LedgerReport>, ApiError> {
    Ok(Json(api.consent.verify_ledger(path.project()).await?))
}

/// The body of an export or an erasure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubjectRequest {
    /// The data subject (required).
    #[serde(default)]
    pub data_subject: Option<String>,
}

impl SubjectRequest {
    fn subject(&self) -> &str {
        self.data_subject.as_deref().unwrap_or_default()
    }
}

/// Everything held about a data subject in the project.
///
/// One JSON document (GDPR Art. 15 and 20, PDPA s.30 and 31): every version of
/// their acceptances, their purpose events, their history, their state
/// now, and every version of the consents and notices they were shown.
#[utoipa::path(
    post,
    path = "/consent/api/projects/{projId}/subjects/export",
    tag = "consent evidence",
    params(("projId" = String, Path, description = "Project id")),
    request_body(content = SubjectRequest, content_type = "application/json",
        example = json!({"dataSubject": "u1"})),
    responses((status = 200, description = "The export", body = SubjectExport)),
    security(("bearer" = ["consent.audit"]))
)]
pub(crate) async fn export_subject<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    JsonBody(request): JsonBody<SubjectRequest>,
) -> Result<Json<SubjectExport>, ApiError> {
    Ok(Json(
        api.consent
            .export_subject(path.project(), request.subject())
            .await?,
    ))
}

/// Erases a data subject.
///
/// GDPR Art. 17, PDPA s.33: their identifier is
/// replaced by a keyed pseudonym, IP, device identifiers, user agent and
/// notes are emptied; the proof that consent existed is kept and the
/// ledger still verifies. Answers what was erased and what was kept. 409
/// `erasure_not_configured` when the server has no pseudonym key.
#[utoipa::path(
    post,
    path = "/consent/api/projects/{projId}/subjects/erase",
    tag = "consent evidence",
    params(("projId" = String, Path, description = "Project id")),
    request_body(content = SubjectRequest, content_type = "application/json",
        example = json!({"dataSubject": "u1"})),
    responses(
        (status = 200, description = "Erased", body = ErasureReport),
        (status = 409, description = "The server has no pseudonym key (erasure_not_configured); nothing erased", body = super::error::Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["consent.admin"]))
)]
pub(crate) async fn erase_subject<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    JsonBody(request): JsonBody<SubjectRequest>,
) -> Result<Json<ErasureReport>, ApiError> {
    Ok(Json(
        api.consent
            .erase_subject(path.project(), request.subject())
            .await?,
    ))
}

/// A consent receipt as served: the signed JWS and, for reading, its
/// payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignedReceipt {
    /// `<acceptance id>.<version>`, or `<purpose event id>.1`.
    pub receipt_id: String,
    /// The receipt as a compact JWS (EdDSA / Ed25519); the key is at
    /// `/.well-known/jwks.json`.
    pub jws: String,
    /// The JWS payload, decoded.
    pub receipt: ConsentReceipt,
}

/// The signed consent receipt of an acceptance or a purpose event.
///
/// For an acceptance, its latest version, or `version`: Kantara Consent
/// Receipt v1.1 fields, the notice and consent revisions, the language of
/// the text shown, and the ledger position and hash of the event. For a
/// purpose acceptance or withdrawal (`id` the purpose event's id): the
/// application, the purpose, its status and dates, and the ledger position
/// and hash. The same
/// receipt is returned byte for byte every time. 409
/// `receipts_not_configured` without a signing key; 404 when the
/// acceptance has no ledger entry.
#[utoipa::path(
    get,
    path = "/consent/api/projects/{projId}/receipts/{id}",
    tag = "consent evidence",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = String, Path, description = "Acceptance id, or purpose event id"),
        ("version" = Option<i64>, Query, description = "Acceptance version (default: the latest; a purpose event has version 1 only)"),
    ),
    responses((status = 200, description = "The receipt", body = SignedReceipt)),
    security(("bearer" = ["consent.r"]))
)]
pub(crate) async fn receipt<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Json<SignedReceipt>, ApiError> {
    query.allow(&["version"], |_| false)?;
    let version = match query.one("version")? {
        None => None,
        Some(v) => Some(v.parse::<i64>().ok().filter(|n| *n >= 1).ok_or_else(|| {
            ApiError::invalid_parameter("version", "expected a whole number from 1")
        })?),
    };
    let Some((signer, controller)) = api.receipts.as_deref() else {
        return Err(crate::Error::new(
            ErrorCode::ReceiptsNotConfigured,
            "receipts need a signing key in the server's configuration",
        )
        .into());
    };
    let (record, entry) = match api
        .consent
        .receipt_source(path.project(), path.get("id"), version)
        .await?
    {
        // A purpose event's receipt, read from its ledger entry alone.
        ReceiptSource::PurposeEvent(text) => {
            let receipt = receipt::for_purpose_event(&text, controller).ok_or_else(|| {
                crate::Error::new(
                    ErrorCode::ReceiptNotFound,
                    "this purpose event's ledger entry does not read as one",
                )
            })?;
            return Ok(Json(SignedReceipt {
                receipt_id: receipt.consent_receipt_id.clone(),
                jws: signer.sign(&receipt),
                receipt,
            }));
        }
        ReceiptSource::Acceptance(record, entry) => (record, entry),
    };
    let entry = entry.as_deref().and_then(EntryRef::parse).ok_or_else(|| {
        crate::Error::new(
            ErrorCode::ReceiptNotFound,
            "this acceptance was recorded before the ledger and has no receipt",
        )
    })?;
    let receipt = receipt::for_acceptance(&record, &entry, controller);
    Ok(Json(SignedReceipt {
        receipt_id: receipt.consent_receipt_id.clone(),
        jws: signer.sign(&receipt),
        receipt,
    }))
}

/// The public keys of receipt signatures.
///
/// A JWK set (RFC 7517; an Ed25519 key is `OKP`, RFC 8037); empty when
/// the server has no signing key. The signing key comes first, then
/// the retired keys whose receipts still verify.
#[utoipa::path(
    get,
    path = "/.well-known/jwks.json",
    tag = "operations",
    responses((status = 200, description = "The JWK set", body = Object))
)]
pub(crate) async fn jwks<S: HttpStore>(State(api): State<Api<S>>) -> Json<serde_json::Value> {
    Json(match api.receipts.as_deref() {
        Some((signer, _)) => signer.jwks(),
        None => serde_json::json!({"keys": []}),
    })
}
