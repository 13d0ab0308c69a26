//! The outbox and its webhooks ([`crate::core::outbox`]).
//!
//! **Architecture invariant:** an outbox event is written by the store
//! call that makes the change it reports, in the same transaction (a
//! redeem, a cancel, a hold's confirmation, a consent acceptance version, a
//! purpose event, an erasure), together with one pending delivery per
//! enabled endpoint of the project that takes its type. No event exists for
//! a change that was rolled back or refused, and no committed change lacks
//! its event. This trait holds the rest: endpoints, and the deliveries'
//! claim, outcome and listing.

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::core::outbox::webhook::{Attempt, Claimed, Delivery, Endpoint, Next};
use crate::core::outbox::OutboxEvent;
use crate::core::page::Page;
use crate::Result;

/// Webhook endpoints, the outbox's events and their deliveries.
pub trait OutboxStore: Send + Sync {
    /// Stores a new endpoint unless the project has `max` already: whether
    /// it was stored.
    fn insert_endpoint(
        &self,
        endpoint: &Endpoint,
        max: usize,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Replaces the URL, filter, enabled flag, description and
    /// last-modified date of a stored endpoint (its secret and creation are
    /// kept): whether it was there.
    fn update_endpoint(&self, endpoint: &Endpoint) -> impl Future<Output = Result<bool>> + Send;

    /// Deletes an endpoint and its deliveries: whether it was there.
    fn delete_endpoint(&self, project: &str, id: Uuid)
        -> impl Future<Output = Result<bool>> + Send;

    /// One endpoint.
    fn endpoint(
        &self,
        project: &str,
        id: Uuid,
    ) -> impl Future<Output = Result<Option<Endpoint>>> + Send;

    /// Every endpoint of the project, oldest first.
    fn endpoints(&self, project: &str) -> impl Future<Output = Result<Vec<Endpoint>>> + Send;

    /// The project's events, oldest first (at most `limit`, after the event
    /// `after`).
    fn outbox_events(
        &self,
        project: &str,
        after: Option<Uuid>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<OutboxEvent>>> + Send;

    /// Claims up to `limit` pending deliveries due at `now` whose endpoint
    /// is enabled and that no live lease holds, leasing each until `now +
    /// lease` and counting the attempt. Safe with several workers on one
    /// database: each delivery is claimed by one of them; a worker that
    /// dies leaves a lease that expires, and the delivery is claimed again.
    /// With `project`, only that project's deliveries.
    fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        lease: Duration,
        limit: u32,
        project: Option<&str>,
    ) -> impl Future<Output = Result<Vec<Claimed>>> + Send;

    /// Records the outcome of the attempt `claimed` made (its `attempts`
    /// fences it: a delivery claimed again since is left alone) and what
    /// follows: whether it was recorded.
    fn finish_delivery(
        &self,
        claimed: &Delivery,
        attempt: &Attempt,
        next: Next,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// A page of an endpoint's deliveries, newest event first.
    fn deliveries(
        &self,
        project: &str,
        endpoint: Uuid,
        page: u32,
        size: u32,
    ) -> impl Future<Output = Result<Page<Delivery>>> + Send;

    /// One delivery with its attempts (oldest first).
    fn delivery(
        &self,
        project: &str,
        endpoint: Uuid,
        event: Uuid,
    ) -> impl Future<Output = Result<Option<(Delivery, Vec<Attempt>)>>> + Send;

    /// Makes a delivery pending again, due at `now`, with a fresh retry
    /// window (its lease dropped): the delivery, when there is one.
    fn redeliver(
        &self,
        project: &str,
        endpoint: Uuid,
        event: Uuid,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Option<Delivery>>> + Send;
}

/// When an erasure happened, for its `consent.erased` event:
/// [`LedgerStore::erase_subject`](crate::store::LedgerStore::erase_subject)
/// takes no time, so the stores read the system clock.
#[cfg_attr(
    not(any(feature = "memory", feature = "sqlite", feature = "postgres")),
    allow(dead_code)
)]
pub(crate) fn erasure_time() -> DateTime<Utc> {
    use crate::core::clock::Clock;
    crate::core::clock::SystemClock.now()
}
