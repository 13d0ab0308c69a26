//! The webhook routes, under `/events/api/projects/{projId}/webhooks`
//! (scope `events.admin`): endpoints, their deliveries and attempts,
//! redelivery (docs/events.md). The delivery worker the server runs is
//! [`worker`] (feature `webhooks`).

#[cfg(feature = "webhooks")]
pub mod worker;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use super::error::ApiError;
use super::extract::{path_uuid, JsonBody, PathParams, QueryParams};
use super::respond::{list_response, page_response};
use super::{Api, HttpStore};
use crate::core::outbox::webhook::{Attempt, Delivery, DeliveryState, Endpoint};
use crate::core::outbox::EventType;
use crate::core::page::Page;
use crate::service::outbox::EndpointInput;

/// A webhook endpoint as the API shows it (the secret only on creation).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookView {
    /// Endpoint id.
    pub id: Uuid,
    /// Where events are posted.
    pub url: String,
    /// The event types sent (empty: every type).
    pub event_types: Vec<EventType>,
    /// Whether events are sent.
    pub enabled: bool,
    /// Free text for operators.
    pub description: Option<String>,
    /// The signing secret: in the answer of the creation only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "whsec_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")]
    pub secret: Option<String>,
    /// Created when.
    pub created_date: DateTime<Utc>,
    /// Last changed when.
    pub last_modified_date: DateTime<Utc>,
}

impl WebhookView {
    fn of(e: Endpoint, with_secret: bool) -> Self {
        WebhookView {
            id: e.id,
            url: e.url,
            event_types: e.event_types,
            enabled: e.enabled,
            description: e.description,
            secret: with_secret.then_some(e.secret),
            created_date: e.created_date,
            last_modified_date: e.last_modified_date,
        }
    }
}

/// One event's delivery to one endpoint.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryView {
    /// The event's id (its `Accord-Event-Id`).
    pub event_id: Uuid,
    /// The endpoint.
    pub endpoint_id: Uuid,
    /// The event's type.
    pub event_type: EventType,
    /// `PENDING`, `DELIVERED` or `DEAD`.
    pub state: DeliveryState,
    /// Attempts made, redeliveries included.
    pub attempts: i32,
    /// Failed attempts since created or redelivered.
    pub failures: i32,
    /// When the next attempt is due (pending only).
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// When a 2xx answered.
    pub delivered_at: Option<DateTime<Utc>>,
    /// The HTTP status of the last attempt (null: no answer).
    pub last_status: Option<i32>,
    /// What went wrong in the last attempt.
    pub last_error: Option<String>,
    /// The attempts, oldest first (in the answer for one delivery only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt_log: Option<Vec<AttemptView>>,
}

impl DeliveryView {
    fn of(d: Delivery, attempts: Option<Vec<Attempt>>) -> Self {
        DeliveryView {
            event_id: d.event_id,
            endpoint_id: d.endpoint_id,
            event_type: d.event_type,
            state: d.state,
            attempts: d.attempts,
            failures: d.failures,
            next_attempt_at: d.next_at,
            delivered_at: d.delivered_at,
            last_status: d.last_status,
            last_error: d.last_error,
            attempt_log: attempts.map(|a| a.into_iter().map(AttemptView::of).collect()),
        }
    }
}

/// One attempt of a delivery.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptView {
    /// 1 for the first.
    pub attempt: i32,
    /// When it started.
    pub at: DateTime<Utc>,
    /// The HTTP status (null: no answer).
    pub status: Option<i32>,
    /// What went wrong (null: a 2xx).
    pub error: Option<String>,
    /// How long it took.
    pub duration_ms: i64,
}

impl AttemptView {
    fn of(a: Attempt) -> Self {
        AttemptView {
            attempt: a.attempt,
            at: a.at,
            status: a.status,
            error: a.error,
            duration_ms: a.duration_ms,
        }
    }
}

fn webhook_id(path: &PathParams) -> Result<Uuid, ApiError> {
    path_uuid(path.get("id"), crate::ErrorCode::WebhookNotFound, "webhook")
}

fn event_id(path: &PathParams) -> Result<Uuid, ApiError> {
    path_uuid(
        path.get("eventId"),
        crate::ErrorCode::DeliveryNotFound,
        "event",
    )
}

const PROBLEM: &str = "application/problem+json";

/// Creates a webhook endpoint.
///
/// The answer holds the endpoint's signing `secret`: it is shown this once
/// (store it; every delivery's `Accord-Signature` is made with it). Events
/// written from now on are sent to it when it is enabled and its
/// `eventTypes` (none: every type) take their type.
#[utoipa::path(
    post,
    path = "/events/api/projects/{projId}/webhooks",
    tag = "events",
    params(("projId" = String, Path, description = "Project id")),
    request_body(content = EndpointInput, content_type = "application/json",
        example = json!({"url": "https://shop.example/hooks/accord", "eventTypes": ["redemption.created"]})),
    responses(
        (status = 201, description = "Created, with its secret (shown once)", body = WebhookView,
            headers(("Location" = String, description = "The endpoint's URL"))),
        (status = 422, description = "Invalid URL, event type or description (validation_failed)", body = super::error::Problem, content_type = PROBLEM),
        (status = 409, description = "The project has as many endpoints as allowed (too_many_webhooks)", body = super::error::Problem, content_type = PROBLEM),
    ),
    security(("bearer" = ["events.admin"]))
)]
pub(crate) async fn create_webhook<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    JsonBody(input): JsonBody<EndpointInput>,
) -> Result<Response, ApiError> {
    let e = api.outbox.create_endpoint(path.project(), input).await?;
    let location = format!("/events/api/projects/{}/webhooks/{}", path.project(), e.id);
    let mut response = (StatusCode::CREATED, Json(WebhookView::of(e, true))).into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    Ok(response)
}

/// Lists the project's webhook endpoints.
///
/// Oldest first, without their secrets: a bare JSON array, its length in
/// `X-Total-Count`.
#[utoipa::path(
    get,
    path = "/events/api/projects/{projId}/webhooks",
    tag = "events",
    params(("projId" = String, Path, description = "Project id")),
    responses((status = 200, description = "Every endpoint of the project", body = Vec<WebhookView>,
        headers(("X-Total-Count" = u64, description = "Number of endpoints")))),
    security(("bearer" = ["events.admin"]))
)]
pub(crate) async fn list_webhooks<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Response, ApiError> {
    let all = api.outbox.endpoints(path.project()).await?;
    Ok(list_response(
        all.into_iter().map(|e| WebhookView::of(e, false)).collect(),
    ))
}

/// Reads a webhook endpoint.
///
/// Its URL, event types, enabled flag and description; the secret is
/// shown only when the endpoint is created.
#[utoipa::path(
    get,
    path = "/events/api/projects/{projId}/webhooks/{id}",
    tag = "events",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = Uuid, Path, description = "Endpoint id"),
    ),
    responses(
        (status = 200, description = "The endpoint", body = WebhookView),
        (status = 404, description = "No such endpoint (webhook_not_found)", body = super::error::Problem, content_type = PROBLEM),
    ),
    security(("bearer" = ["events.admin"]))
)]
pub(crate) async fn get_webhook<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Json<WebhookView>, ApiError> {
    let id = webhook_id(&path)?;
    let e = api.outbox.endpoint(path.project(), id).await?;
    Ok(Json(WebhookView::of(e, false)))
}

/// Replaces a webhook endpoint.
///
/// Its URL, event types, enabled flag and description; the secret is
/// kept. Disabling it (`"enabled": false`) stops its deliveries: events written
/// meanwhile get none, and pending ones wait until it is enabled again.
#[utoipa::path(
    put,
    path = "/events/api/projects/{projId}/webhooks/{id}",
    tag = "events",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = Uuid, Path, description = "Endpoint id"),
    ),
    request_body(content = EndpointInput, content_type = "application/json",
        example = json!({"url": "https://shop.example/hooks/accord", "enabled": false})),
    responses(
        (status = 200, description = "The endpoint as saved", body = WebhookView),
        (status = 404, description = "No such endpoint (webhook_not_found)", body = super::error::Problem, content_type = PROBLEM),
        (status = 422, description = "Invalid URL, event type or description (validation_failed)", body = super::error::Problem, content_type = PROBLEM),
    ),
    security(("bearer" = ["events.admin"]))
)]
pub(crate) async fn update_webhook<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    JsonBody(input): JsonBody<EndpointInput>,
) -> Result<Json<WebhookView>, ApiError> {
    let id = webhook_id(&path)?;
    let e = api
        .outbox
        .update_endpoint(path.project(), id, input)
        .await?;
    Ok(Json(WebhookView::of(e, false)))
}

/// Deletes a webhook endpoint.
///
/// Its deliveries and their attempts go with it; the events stay in the
/// outbox.
#[utoipa::path(
    delete,
    path = "/events/api/projects/{projId}/webhooks/{id}",
    tag = "events",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = Uuid, Path, description = "Endpoint id"),
    ),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such endpoint (webhook_not_found)", body = super::error::Problem, content_type = PROBLEM),
    ),
    security(("bearer" = ["events.admin"]))
)]
pub(crate) async fn delete_webhook<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<StatusCode, ApiError> {
    let id = webhook_id(&path)?;
    api.outbox.delete_endpoint(path.project(), id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Lists an endpoint's deliveries.
///
/// Newest event first. A bare JSON array, one page of it; the total over all pages is in
/// `X-Total-Count`.
#[utoipa::path(
    get,
    path = "/events/api/projects/{projId}/webhooks/{id}/deliveries",
    tag = "events",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = Uuid, Path, description = "Endpoint id"),
        ("page" = Option<u32>, Query, description = "Zero-based page (default 0)"),
        ("size" = Option<u32>, Query, description = "Page size, 1 to 1000 (default 20)"),
    ),
    responses(
        (status = 200, description = "A page of deliveries; the total is in X-Total-Count", body = Vec<DeliveryView>,
            headers(("X-Total-Count" = u64, description = "Number of deliveries over all pages"))),
        (status = 404, description = "No such endpoint (webhook_not_found)", body = super::error::Problem, content_type = PROBLEM),
    ),
    security(("bearer" = ["events.admin"]))
)]
pub(crate) async fn list_deliveries<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
    query: QueryParams,
) -> Result<Response, ApiError> {
    let (page, size) = query.only_paging()?;
    let id = webhook_id(&path)?;
    let p = api
        .outbox
        .deliveries(path.project(), id, page, size)
        .await?;
    Ok(page_response(Page {
        items: p
            .items
            .into_iter()
            .map(|d| DeliveryView::of(d, None))
            .collect(),
        page: p.page,
        size: p.size,
        total: p.total,
    }))
}

/// Reads one delivery.
///
/// Where it stands, with every attempt (`attemptLog`, oldest first): when,
/// the HTTP status or the error, how long it took.
#[utoipa::path(
    get,
    path = "/events/api/projects/{projId}/webhooks/{id}/deliveries/{eventId}",
    tag = "events",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = Uuid, Path, description = "Endpoint id"),
        ("eventId" = Uuid, Path, description = "Event id"),
    ),
    responses(
        (status = 200, description = "The delivery and its attempts", body = DeliveryView),
        (status = 404, description = "No such delivery (delivery_not_found)", body = super::error::Problem, content_type = PROBLEM),
    ),
    security(("bearer" = ["events.admin"]))
)]
pub(crate) async fn get_delivery<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Json<DeliveryView>, ApiError> {
    let (id, event) = (webhook_id(&path)?, event_id(&path)?);
    let (d, attempts) = api.outbox.delivery(path.project(), id, event).await?;
    Ok(Json(DeliveryView::of(d, Some(attempts))))
}

/// Sends a delivery again.
///
/// It becomes `PENDING`, due now, with a fresh retry schedule (a `DEAD` or
/// `DELIVERED` one too). The event keeps its id, so a receiver that
/// deduplicates on `Accord-Event-Id` sees it once.
#[utoipa::path(
    post,
    path = "/events/api/projects/{projId}/webhooks/{id}/deliveries/{eventId}/redeliver",
    tag = "events",
    params(
        ("projId" = String, Path, description = "Project id"),
        ("id" = Uuid, Path, description = "Endpoint id"),
        ("eventId" = Uuid, Path, description = "Event id"),
    ),
    responses(
        (status = 202, description = "Pending again, due now", body = DeliveryView),
        (status = 404, description = "No such delivery (delivery_not_found)", body = super::error::Problem, content_type = PROBLEM),
    ),
    security(("bearer" = ["events.admin"]))
)]
pub(crate) async fn redeliver<S: HttpStore>(
    State(api): State<Api<S>>,
    path: PathParams,
) -> Result<Response, ApiError> {
    let (id, event) = (webhook_id(&path)?, event_id(&path)?);
    let d = api.outbox.redeliver(path.project(), id, event).await?;
    Ok((StatusCode::ACCEPTED, Json(DeliveryView::of(d, None))).into_response())
}
