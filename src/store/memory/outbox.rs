//! The outbox and webhooks in memory. An event is appended under the lock
//! of the change it reports (taken first, then this state's lock), so it
//! is written atomically with the change.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{lock, MemoryStore};
use crate::core::outbox::webhook::{Attempt, Claimed, Delivery, DeliveryState, Endpoint, Next};
use crate::core::outbox::OutboxEvent;
use crate::store::{OutboxStore, Page};
use crate::Result;

type Key = (String, Uuid, Uuid);

/// A delivery with its lease and attempts.
#[derive(Debug)]
struct Held {
    delivery: Delivery,
    lease_until: Option<DateTime<Utc>>,
    attempts: Vec<Attempt>,
}

/// The events, endpoints and deliveries of every project.
#[derive(Debug, Default)]
pub(super) struct State {
    events: Vec<OutboxEvent>,
    endpoints: Vec<Endpoint>,
    deliveries: BTreeMap<Key, Held>,
}

impl State {
    /// Appends `event` and its deliveries.
    pub(super) fn append(&mut self, event: OutboxEvent) {
        for e in &self.endpoints {
            if e.project_id == event.project_id && e.takes(&event.event_type) {
                let d = Delivery {
                    event_id: event.id,
                    endpoint_id: e.id,
                    project_id: event.project_id.clone(),
                    event_type: event.event_type.clone(),
                    state: DeliveryState::Pending,
                    attempts: 0,
                    failures: 0,
                    next_at: Some(event.occurred_at),
                    since: event.occurred_at,
                    delivered_at: None,
                    last_status: None,
                    last_error: None,
                };
                self.deliveries.insert(
                    (event.project_id.clone(), e.id, event.id),
                    Held {
                        delivery: d,
                        lease_until: None,
                        attempts: Vec::new(),
                    },
                );
            }
        }
        self.events.push(event);
    }

    /// Replaces `subject` with `pseudonym` in the project's events.
    pub(super) fn erase(&mut self, project: &str, subject: &str, pseudonym: &str) {
        for e in &mut self.events {
            if e.project_id == project && e.data_subject.as_deref() == Some(subject) {
                e.data_subject = Some(pseudonym.to_owned());
            }
        }
    }

    fn endpoint(&self, project: &str, id: Uuid) -> Option<&Endpoint> {
        self.endpoints
            .iter()
            .find(|e| e.project_id == project && e.id == id)
    }
}

impl OutboxStore for MemoryStore {
    async fn insert_endpoint(&self, endpoint: &Endpoint, max: usize) -> Result<bool> {
        let mut s = lock(&self.outbox);
        let n = s
            .endpoints
            .iter()
            .filter(|e| e.project_id == endpoint.project_id)
            .count();
        if n >= max {
            return Ok(false);
        }
        s.endpoints.push(endpoint.clone());
        Ok(true)
    }

    async fn update_endpoint(&self, endpoint: &Endpoint) -> Result<bool> {
        let mut s = lock(&self.outbox);
        let Some(e) = s
            .endpoints
            .iter_mut()
            .find(|e| e.project_id == endpoint.project_id && e.id == endpoint.id)
        else {
            return Ok(false);
        };
        e.url.clone_from(&endpoint.url);
        e.event_types.clone_from(&endpoint.event_types);
        e.enabled = endpoint.enabled;
        e.description.clone_from(&endpoint.description);
        e.last_modified_date = endpoint.last_modified_date;
        Ok(true)
    }

    async fn delete_endpoint(&self, project: &str, id: Uuid) -> Result<bool> {
        let mut s = lock(&self.outbox);
        let before = s.endpoints.len();
        s.endpoints
            .retain(|e| !(e.project_id == project && e.id == id));
        s.deliveries
            .retain(|(p, e, _), _| !(p == project && *e == id));
        Ok(s.endpoints.len() < before)
    }

    async fn endpoint(&self, project: &str, id: Uuid) -> Result<Option<Endpoint>> {
        Ok(lock(&self.outbox).endpoint(project, id).cloned())
    }

    async fn endpoints(&self, project: &str) -> Result<Vec<Endpoint>> {
        let s = lock(&self.outbox);
        let mut out: Vec<Endpoint> = s
            .endpoints
            .iter()
            .filter(|e| e.project_id == project)
            .cloned()
            .collect();
        out.sort_by_key(|e| (e.created_date, e.id));
        Ok(out)
    }

    async fn outbox_events(
        &self,
        project: &str,
        after: Option<Uuid>,
        limit: u32,
    ) -> Result<Vec<OutboxEvent>> {
        let s = lock(&self.outbox);
        let mut out: Vec<OutboxEvent> = s
            .events
            .iter()
            .filter(|e| e.project_id == project && after.is_none_or(|a| e.id > a))
            .cloned()
            .collect();
        out.sort_by_key(|e| e.id);
        out.truncate(limit as usize);
        Ok(out)
    }

    async fn claim_deliveries(
        &self,
        now: DateTime<Utc>,
        lease: Duration,
        limit: u32,
        project: Option<&str>,
    ) -> Result<Vec<Claimed>> {
        let until = now + chrono::Duration::from_std(lease).map_err(crate::Error::internal)?;
        let mut s = lock(&self.outbox);
        let mut due: Vec<(DateTime<Utc>, Key)> = s
            .deliveries
            .iter()
            .filter(|((p, e, _), h)| {
                project.is_none_or(|only| only == p)
                    && h.delivery.state == DeliveryState::Pending
                    && h.delivery.next_at.is_some_and(|t| t <= now)
                    && h.lease_until.is_none_or(|t| t <= now)
                    && s.endpoint(p, *e).is_some_and(|e| e.enabled)
            })
            .map(|(k, h)| (h.delivery.next_at.unwrap_or(now), k.clone()))
            .collect();
        due.sort();
        due.truncate(limit as usize);
        let mut out = Vec::new();
        for (_, key) in due {
            let (url, secret) = match s.endpoint(&key.0, key.1) {
                Some(e) => (e.url.clone(), e.secret.clone()),
                None => continue,
            };
            let Some(event) = s
                .events
                .iter()
                .find(|e| e.project_id == key.0 && e.id == key.2)
                .cloned()
            else {
                continue;
            };
            let Some(h) = s.deliveries.get_mut(&key) else {
                continue;
            };
            h.lease_until = Some(until);
            h.delivery.attempts += 1;
            out.push(Claimed {
                delivery: h.delivery.clone(),
                event,
                url,
                secret,
            });
        }
        Ok(out)
    }

    async fn finish_delivery(
        &self,
        claimed: &Delivery,
        attempt: &Attempt,
        next: Next,
    ) -> Result<bool> {
        let mut s = lock(&self.outbox);
        let key = (
            claimed.project_id.clone(),
            claimed.endpoint_id,
            claimed.event_id,
        );
        let Some(h) = s.deliveries.get_mut(&key) else {
            return Ok(false);
        };
        if h.delivery.attempts != claimed.attempts || h.delivery.state != DeliveryState::Pending {
            return Ok(false);
        }
        let d = &mut h.delivery;
        (d.state, d.next_at, d.delivered_at) = match next {
            Next::Delivered => (DeliveryState::Delivered, None, Some(attempt.at)),
            Next::RetryAt(at) => (DeliveryState::Pending, Some(at), None),
            Next::Dead => (DeliveryState::Dead, None, None),
        };
        d.failures = claimed.failures;
        d.last_status = attempt.status;
        d.last_error.clone_from(&attempt.error);
        h.lease_until = None;
        if !h.attempts.iter().any(|a| a.attempt == attempt.attempt) {
            h.attempts.push(attempt.clone());
        }
        Ok(true)
    }

    async fn deliveries(
        &self,
        project: &str,
        endpoint: Uuid,
        page: u32,
        size: u32,
    ) -> Result<Page<Delivery>> {
        let s = lock(&self.outbox);
        let mut all: Vec<&Delivery> = s
            .deliveries
            .iter()
            .filter(|((p, e, _), _)| p == project && *e == endpoint)
            .map(|(_, h)| &h.delivery)
            .collect();
        all.sort_by_key(|d| std::cmp::Reverse(d.event_id));
        let total = all.len() as u64;
        let start = (page as usize).saturating_mul(size as usize);
        let items = all
            .into_iter()
            .skip(start)
            .take(size as usize)
            .cloned()
            .collect();
        Ok(Page {
            items,
            page,
            size,
            total,
        })
    }

    async fn delivery(
        &self,
        project: &str,
        endpoint: Uuid,
        event: Uuid,
    ) -> Result<Option<(Delivery, Vec<Attempt>)>> {
        let s = lock(&self.outbox);
        Ok(s.deliveries
            .get(&(project.to_owned(), endpoint, event))
            .map(|h| {
                let mut attempts = h.attempts.clone();
                attempts.sort_by_key(|a| a.attempt);
                (h.delivery.clone(), attempts)
            }))
    }

    async fn redeliver(
        &self,
        project: &str,
        endpoint: Uuid,
        event: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Option<Delivery>> {
        let mut s = lock(&self.outbox);
        let Some(h) = s.deliveries.get_mut(&(project.to_owned(), endpoint, event)) else {
            return Ok(None);
        };
        h.lease_until = None;
        let d = &mut h.delivery;
        d.state = DeliveryState::Pending;
        d.next_at = Some(now);
        d.since = now;
        d.failures = 0;
        d.delivered_at = None;
        Ok(Some(d.clone()))
    }
}
