//! Events out: webhook endpoints and the delivery of the outbox's events
//! (`docs/events.md`).
//!
//! [`OutboxService`] manages endpoints and deliveries. [`OutboxService::deliver_due`]
//! is one round of the delivery worker: claim what is due, post each
//! through a [`Sender`], record each outcome. The sender is the only I/O
//! it does not own: the server's is an HTTP client (`adapter/http/webhooks`),
//! tests bring their own.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::core::clock::Clock;
use crate::core::error::ErrorCode;
use crate::core::outbox::webhook::{
    self, Attempt, Claimed, Delivery, Endpoint, Next, RetryPolicy, MAX_ENDPOINTS,
};
use crate::core::outbox::EventType;
use crate::core::page::{check_page_size, Page};
use crate::store::OutboxStore;
use crate::{Error, Result};

/// What a caller sets on an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndpointInput {
    /// The `http://` or `https://` URL events are posted to.
    #[cfg_attr(
        feature = "http",
        schema(max_length = 2048, example = "https://shop.example/hooks/accord")
    )]
    pub url: String,
    /// The event types sent (none or absent: every type).
    #[serde(default)]
    pub event_types: Vec<EventType>,
    /// Whether events are sent (default true).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Free text for operators.
    #[serde(default)]
    #[cfg_attr(feature = "http", schema(max_length = 500))]
    pub description: Option<String>,
}

fn yes() -> bool {
    true
}

/// What a [`Sender`] got back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendOutcome {
    /// The receiver answered with this status.
    Status(u16),
    /// No answer: connection refused, timeout, …
    Failed(String),
}

/// Posts one signed event to a URL.
pub trait Sender: Send + Sync {
    /// POSTs `body` (JSON) to `url` with these headers.
    fn send(
        &self,
        url: &str,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    ) -> impl Future<Output = SendOutcome> + Send;
}

/// How the delivery worker runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerSettings {
    /// Time between rounds when nothing was due.
    pub interval: Duration,
    /// How long a claimed delivery is leased: past it, another worker
    /// claims it again (a worker that died mid-delivery).
    pub lease: Duration,
    /// Deliveries claimed per round at most.
    pub batch: u32,
    /// The retry schedule.
    pub retry: RetryPolicy,
    /// Only this project's deliveries (`None`: every project's).
    pub project: Option<String>,
}

impl Default for WorkerSettings {
    /// Every second, 60 s leases, 32 at a time, the default schedule.
    fn default() -> Self {
        WorkerSettings {
            interval: Duration::from_secs(1),
            lease: Duration::from_secs(60),
            batch: 32,
            retry: RetryPolicy::default(),
            project: None,
        }
    }
}

/// Webhook endpoints and deliveries over a store.
pub struct OutboxService<S> {
    store: Arc<S>,
    clock: Arc<dyn Clock>,
}

impl<S> Clone for OutboxService<S> {
    fn clone(&self) -> Self {
        OutboxService {
            store: Arc::clone(&self.store),
            clock: Arc::clone(&self.clock),
        }
    }
}

impl<S> std::fmt::Debug for OutboxService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxService").finish_non_exhaustive()
    }
}

fn webhook_not_found(id: Uuid) -> Error {
    Error::new(
        ErrorCode::WebhookNotFound,
        format!("no webhook endpoint {id} in this project"),
    )
}

impl<S: OutboxStore> OutboxService<S> {
    /// The service over `store`, reading time from `clock`.
    pub fn new(store: Arc<S>, clock: Arc<dyn Clock>) -> Self {
        OutboxService { store, clock }
    }

    /// Creates an endpoint with a new secret (returned here only).
    pub async fn create_endpoint(&self, project: &str, input: EndpointInput) -> Result<Endpoint> {
        webhook::validate(&input.url, &input.event_types, input.description.as_deref())?;
        let now = self.clock.now();
        let endpoint = Endpoint {
            id: Uuid::new_v4(),
            project_id: project.to_owned(),
            url: input.url,
            secret: webhook::new_secret(),
            event_types: input.event_types,
            enabled: input.enabled,
            description: input.description,
            created_date: now,
            last_modified_date: now,
        };
        if !self.store.insert_endpoint(&endpoint, MAX_ENDPOINTS).await? {
            return Err(Error::new(
                ErrorCode::TooManyWebhooks,
                format!("a project has at most {MAX_ENDPOINTS} webhook endpoints"),
            ));
        }
        Ok(endpoint)
    }

    /// Replaces what a caller sets on an endpoint (its secret is kept).
    pub async fn update_endpoint(
        &self,
        project: &str,
        id: Uuid,
        input: EndpointInput,
    ) -> Result<Endpoint> {
        webhook::validate(&input.url, &input.event_types, input.description.as_deref())?;
        let mut e = self.endpoint(project, id).await?;
        e.url = input.url;
        e.event_types = input.event_types;
        e.enabled = input.enabled;
        e.description = input.description;
        e.last_modified_date = self.clock.now();
        if !self.store.update_endpoint(&e).await? {
            return Err(webhook_not_found(id));
        }
        Ok(e)
    }

    /// Deletes an endpoint and its deliveries.
    pub async fn delete_endpoint(&self, project: &str, id: Uuid) -> Result<()> {
        if self.store.delete_endpoint(project, id).await? {
            Ok(())
        } else {
            Err(webhook_not_found(id))
        }
    }

    /// One endpoint.
    pub async fn endpoint(&self, project: &str, id: Uuid) -> Result<Endpoint> {
        self.store
            .endpoint(project, id)
            .await?
            .ok_or_else(|| webhook_not_found(id))
    }

    /// Every endpoint of the project.
    pub async fn endpoints(&self, project: &str) -> Result<Vec<Endpoint>> {
        self.store.endpoints(project).await
    }

    /// A page of an endpoint's deliveries, newest event first.
    pub async fn deliveries(
        &self,
        project: &str,
        endpoint: Uuid,
        page: u32,
        size: u32,
    ) -> Result<Page<Delivery>> {
        check_page_size(size)?;
        self.endpoint(project, endpoint).await?;
        self.store.deliveries(project, endpoint, page, size).await
    }

    /// One delivery and its attempts.
    pub async fn delivery(
        &self,
        project: &str,
        endpoint: Uuid,
        event: Uuid,
    ) -> Result<(Delivery, Vec<Attempt>)> {
        self.store
            .delivery(project, endpoint, event)
            .await?
            .ok_or_else(|| delivery_not_found(endpoint, event))
    }

    /// Makes a delivery pending again, due now, with a fresh retry window.
    pub async fn redeliver(&self, project: &str, endpoint: Uuid, event: Uuid) -> Result<Delivery> {
        self.store
            .redeliver(project, endpoint, event, self.clock.now())
            .await?
            .ok_or_else(|| delivery_not_found(endpoint, event))
    }

    /// One round of the worker: claims the deliveries due now, posts them
    /// (concurrently), records each outcome. Returns how many were claimed.
    pub async fn deliver_due<T: Sender>(
        &self,
        sender: &T,
        settings: &WorkerSettings,
    ) -> Result<usize> {
        let claimed = self
            .store
            .claim_deliveries(
                self.clock.now(),
                settings.lease,
                settings.batch,
                settings.project.as_deref(),
            )
            .await?;
        let n = claimed.len();
        let sends = claimed
            .into_iter()
            .map(|c| self.deliver_one(sender, c, &settings.retry));
        for outcome in futures_join_all(sends).await {
            outcome?;
        }
        Ok(n)
    }

    async fn deliver_one<T: Sender>(
        &self,
        sender: &T,
        c: Claimed,
        retry: &RetryPolicy,
    ) -> Result<()> {
        let at = self.clock.now();
        let body = c.event.body();
        let headers = vec![
            ("content-type", "application/json".to_owned()),
            ("accord-event-id", c.event.id.to_string()),
            ("accord-event-type", c.event.event_type.as_str().to_owned()),
            (
                "accord-signature",
                webhook::signature(&c.secret, at.timestamp(), &body),
            ),
        ];
        let started = Instant::now();
        let outcome = sender.send(&c.url, headers, body).await;
        let duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let mut d = c.delivery;
        let (status, error) = match &outcome {
            SendOutcome::Status(s) if (200..300).contains(s) => (Some(i32::from(*s)), None),
            SendOutcome::Status(s) => (Some(i32::from(*s)), Some(format!("HTTP status {s}"))),
            SendOutcome::Failed(e) => (None, Some(webhook::error_text(e))),
        };
        let now = self.clock.now();
        let next = if error.is_none() {
            Next::Delivered
        } else {
            d.failures += 1;
            retry.after_failure(&d, now)
        };
        let attempt = Attempt {
            attempt: d.attempts,
            at,
            status,
            error,
            duration_ms,
        };
        self.store.finish_delivery(&d, &attempt, next).await?;
        Ok(())
    }
}

fn delivery_not_found(endpoint: Uuid, event: Uuid) -> Error {
    Error::new(
        ErrorCode::DeliveryNotFound,
        format!("the webhook endpoint {endpoint} has no delivery of event {event}"),
    )
}

/// Awaits every future, concurrently, in order (no extra dependency: the
/// futures are few, polled round-robin).
async fn futures_join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut pending: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for (i, f) in pending.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => done = false,
                }
            }
        }
        if done {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    out.into_iter().flatten().collect()
}
