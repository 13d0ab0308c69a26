//! Events out: the transactional outbox and the webhooks that carry it.
//!
//! An [`OutboxEvent`] is written by the store in the same transaction as
//! the change it reports (a redemption, a cancel, a consent acceptance or
//! withdrawal, a purpose acceptance or withdrawal, an erasure), so an event
//! exists exactly when its change was committed. The same transaction adds
//! one pending [`webhook::Delivery`] per enabled endpoint of the project
//! whose filter takes the event's type. A worker then posts each delivery,
//! signed ([`webhook::signature`]), until a 2xx answers or its retries run
//! out ([`webhook::RetryPolicy`]). `docs/events.md` is the user's guide.
//!
//! **The data subject is kept out of the payload.** A consent event's
//! subject is stored beside the payload ([`OutboxEvent::data_subject`]) and
//! put into the body only when it is sent; an erasure replaces it with the
//! pseudonym in every stored event of the subject, delivered or not, so no
//! event sent after an erasure names the erased subject.

pub mod webhook;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use crate::core::campaign::Redemption;
use crate::core::consent::{ContentRecord, PurposeEvent};

crate::string_enum! {
    /// The type of an event, as webhooks receive it and filter on it.
    pub enum EventType {
        /// A redemption was recorded (by a redeem or a hold's confirmation).
        RedemptionCreated = "redemption.created",
        /// A redemption was cancelled (its quota given back).
        RedemptionCancelled = "redemption.cancelled",
        /// A consent acceptance version with status `ACCEPTED` was written.
        ConsentAccepted = "consent.accepted",
        /// A consent acceptance version with status `WITHDRAWN` was written.
        ConsentWithdrawn = "consent.withdrawn",
        /// A purpose was accepted or withdrawn.
        PurposeChanged = "consent.purpose_changed",
        /// A data subject was erased (pseudonymised).
        ConsentErased = "consent.erased",
    }
}

/// One event of the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEvent {
    /// Stable id (UUID version 7: ordered by time), the same in every
    /// delivery of the event (`Accord-Event-Id`).
    pub id: Uuid,
    /// Project.
    pub project_id: String,
    /// Type.
    pub event_type: EventType,
    /// When the change happened.
    pub occurred_at: DateTime<Utc>,
    /// The consent data subject the event is about, kept apart from the
    /// payload (see the module docs); `None` for campaign events.
    pub data_subject: Option<String>,
    /// What happened (a JSON object), without the data subject.
    pub payload: Map<String, Value>,
}

impl OutboxEvent {
    fn new(
        project: &str,
        event_type: EventType,
        at: DateTime<Utc>,
        subject: Option<&str>,
        payload: Value,
    ) -> Self {
        OutboxEvent {
            id: Uuid::now_v7(),
            project_id: project.to_owned(),
            event_type,
            occurred_at: at,
            data_subject: subject.map(str::to_owned),
            payload: match payload {
                Value::Object(m) => m,
                _ => Map::new(),
            },
        }
    }

    /// `redemption.created` or, for a cancelled one, `redemption.cancelled`.
    pub fn for_redemption(r: &Redemption) -> Self {
        let cancelled = r.cancelled_date.is_some();
        let (t, at) = match r.cancelled_date {
            Some(at) => (EventType::RedemptionCancelled, at),
            None => (EventType::RedemptionCreated, r.created_date),
        };
        let mut payload = json!({
            "redemptionId": r.id,
            "campaignId": r.campaign_id,
            "campaignCode": r.campaign_code,
            "campaignVersion": r.campaign_version,
            "status": r.status.as_str(),
            "userId": r.user_id,
            "channel": r.channel,
            "actions": r.action_txs,
            "createdDate": r.created_date,
        });
        if let Some(code) = &r.code {
            payload["code"] = json!(code);
        }
        if cancelled {
            payload["cancelledDate"] = json!(r.cancelled_date);
        }
        OutboxEvent::new(&r.project_id, t, at, None, payload)
    }

    /// `consent.accepted` or `consent.withdrawn` for a version of a consent
    /// acceptance; `None` for other content.
    pub fn for_acceptance(record: &ContentRecord) -> Option<Self> {
        use crate::core::consent::ContentType;
        if record.content_type != ContentType::ConsentAcceptance {
            return None;
        }
        let d = &record.data;
        let text = |k: &str| d.get(k).cloned().unwrap_or(Value::Null);
        let t = if d.get("status").and_then(Value::as_str) == Some("WITHDRAWN") {
            EventType::ConsentWithdrawn
        } else {
            EventType::ConsentAccepted
        };
        let payload = json!({
            "acceptanceId": record.id,
            "version": record.version,
            "app": text("app"),
            "consentId": text("consentId"),
            "consentRevision": text("consentRevision"),
            "status": text("status"),
            "purposes": text("purposes"),
            "acceptanceDate": text("acceptanceDate"),
            "expiredDate": text("expiredDate"),
            "withdrawalDate": text("withdrawalDate"),
        });
        let subject = d.get("dataSubject").and_then(Value::as_str);
        Some(OutboxEvent::new(
            &record.project_id,
            t,
            record.last_modified_date,
            subject,
            payload,
        ))
    }

    /// `consent.purpose_changed` for a purpose acceptance or withdrawal.
    pub fn for_purpose_event(e: &PurposeEvent) -> Self {
        let payload = json!({
            "purposeEventId": e.id,
            "app": e.app,
            "purposeCode": e.purpose_code,
            "status": e.status.as_str(),
            "consentId": e.consent_id,
            "acceptanceDate": e.acceptance_date,
            "expiredDate": e.expired_date,
            "withdrawalDate": e.withdrawal_date,
        });
        OutboxEvent::new(
            &e.project_id,
            EventType::PurposeChanged,
            e.recorded_at,
            Some(&e.data_subject),
            payload,
        )
    }

    /// `consent.erased`: the subject's records now name `pseudonym`.
    pub fn for_erasure(project: &str, pseudonym: &str, at: DateTime<Utc>) -> Self {
        OutboxEvent::new(
            project,
            EventType::ConsentErased,
            at,
            Some(pseudonym),
            json!({}),
        )
    }

    /// The JSON body a webhook receives: `id`, `type`, `projectId`,
    /// `occurredAt`, and `data` (the payload, with `dataSubject` when the
    /// event has one).
    pub fn body(&self) -> Vec<u8> {
        let mut data = self.payload.clone();
        if let Some(s) = &self.data_subject {
            data.insert("dataSubject".into(), Value::String(s.clone()));
        }
        let body = WireEvent {
            id: self.id,
            event_type: self.event_type.as_str(),
            project_id: &self.project_id,
            occurred_at: self.occurred_at,
            data,
        };
        serde_json::to_vec(&body).unwrap_or_default()
    }
}

/// The body of a delivery.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireEvent<'a> {
    id: Uuid,
    #[serde(rename = "type")]
    event_type: &'a str,
    project_id: &'a str,
    occurred_at: DateTime<Utc>,
    data: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subject_is_put_in_the_body_only() {
        let e = OutboxEvent::for_erasure("p", "pseudo", Utc::now());
        assert!(e.payload.get("dataSubject").is_none());
        let body: Value = serde_json::from_slice(&e.body()).unwrap();
        assert_eq!(body["type"], "consent.erased");
        assert_eq!(body["data"]["dataSubject"], "pseudo");
        assert_eq!(body["id"], e.id.to_string());
    }
}
