//! A subject's history kept as rows, so that a store can page it with one
//! bounded query (see `docs/evidence.md`, "How history is kept").
//!
//! [`subject_events`](super::evidence::subject_events) derives a history
//! from every record of a subject. The same events are kept as rows, one per
//! event, each keyed by (`at`, `derived`, `ord`) — the history's order:
//!
//! - a stored event (an acceptance version, a purpose event) has
//!   `derived = false` and `ord` its `seq`;
//! - a derived event (`EXPIRED`, `RECONSENT_REQUIRED`) has `derived = true`
//!   and `ord` = 3 × (the `seq` of its acceptance's first version) + 0 for
//!   `EXPIRED`, 1 for a new consent revision, 2 for a new notice revision:
//!   derived events of one instant in the order `subject_events` gives them.
//!
//! An acceptance's rows ([`acceptance_rows`]) depend only on its own
//! versions and on the version histories of the consent and notice it pins,
//! so a store recomputes them when one of those is written. Derived rows are
//! computed as if "now" were the end of time; a read keeps those at or
//! before its own "now" ([`HistoryRow::visible_at`]), which gives exactly the
//! events `subject_events` derives at that instant (timestamps of one
//! record's versions never decrease).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::content::{get_string, ContentRecord};
use super::evidence::{acceptance_events, purpose_event, EventKind, Pins, SubjectEvent};
use super::model::{PurposeEvent, Reason};

/// One event of a subject's history as a store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRow {
    /// The data subject.
    pub subject: String,
    /// Derived (`EXPIRED`, `RECONSENT_REQUIRED`) rather than stored.
    pub derived: bool,
    /// The order among events of one instant (see the module docs).
    pub ord: i64,
    /// Whether the row is of an acceptance (else of a purpose event).
    pub of_acceptance: bool,
    /// The event.
    pub event: SubjectEvent,
}

impl HistoryRow {
    /// Whether a read at `now` shows the row: stored rows always, derived
    /// ones once their instant is reached.
    pub fn visible_at(&self, now: DateTime<Utc>) -> bool {
        !self.derived || self.event.at <= now
    }

    /// The history's order key.
    pub fn key(&self) -> (DateTime<Utc>, bool, i64) {
        (self.event.at, self.derived, self.ord)
    }
}

/// An acceptance past its lifespan: its `expiredDate` passed while it was
/// accepted (its history has an `EXPIRED` event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ExpiredAcceptance {
    /// The data subject (a `pseudonym:` once erased).
    pub data_subject: String,
    /// The acceptance id.
    pub acceptance_id: String,
    /// Its latest version.
    pub version: Option<i64>,
    /// The application.
    pub application: String,
    /// The consent accepted.
    pub consent_id: Option<String>,
    /// The consent revision accepted.
    pub consent_revision: Option<i64>,
    /// The privacy notice shown.
    pub privacy_notice_id: Option<String>,
    /// Its revision.
    pub privacy_notice_revision: Option<i64>,
    /// The purposes accepted.
    pub purposes: Vec<String>,
    /// `acceptanceDate`.
    pub acceptance_date: Option<DateTime<Utc>>,
    /// When the lifespan ended (`expiredDate`).
    pub expired_date: DateTime<Utc>,
}

impl ExpiredAcceptance {
    /// The acceptance an `EXPIRED` event of `subject` names (`None` for
    /// other kinds).
    pub fn of(subject: &str, e: &SubjectEvent) -> Option<Self> {
        (e.kind == EventKind::Expired).then(|| ExpiredAcceptance {
            data_subject: subject.to_owned(),
            acceptance_id: e.record_id.clone(),
            version: e.version,
            application: e.application.clone(),
            consent_id: e.consent_id.clone(),
            consent_revision: e.consent_revision,
            privacy_notice_id: e.privacy_notice_id.clone(),
            privacy_notice_revision: e.privacy_notice_revision,
            purposes: e.purposes.clone(),
            acceptance_date: e.acceptance_date,
            expired_date: e.at,
        })
    }
}

/// What a retention purge did
/// ([`ConsentService::purge_retention`](crate::service::consent::ConsentService::purge_retention)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PurgeReport {
    /// Acceptances that ended (withdrawn or expired) before this instant
    /// were purged: now minus the configured retention.
    pub ended_before: DateTime<Utc>,
    /// The retention, in days.
    pub retention_days: i64,
    /// Acceptances purged.
    pub acceptances: u64,
    /// What was rewritten: acceptance versions and ledger salts (purpose
    /// events are left to erasure).
    pub erased: super::erasure::ErasureCounts,
}

/// The consent and the privacy notice an acceptance pins (its latest pins,
/// as its history reads them): whose version histories
/// [`acceptance_rows`] needs.
pub fn pinned_ids(versions: &[ContentRecord]) -> (Option<String>, Option<String>) {
    let mut pins = Pins::default();
    for v in versions {
        pins.update(v);
    }
    (pins.consent_id, pins.notice_id)
}

/// The rows of one acceptance: `versions` every version of it (any
/// order); `consent` and `notice` the version histories (oldest first) of
/// the consent and notice it pins ([`pinned_ids`]), empty when unknown.
pub fn acceptance_rows(
    versions: &[ContentRecord],
    consent: &[ContentRecord],
    notice: &[ContentRecord],
) -> Vec<HistoryRow> {
    let mut sorted: Vec<&ContentRecord> = versions.iter().collect();
    sorted.sort_by_key(|r| r.seq);
    let Some(first) = sorted.first() else {
        return Vec::new();
    };
    let first_seq = first.seq;
    let subject = sorted
        .iter()
        .rev()
        .find_map(|r| get_string(&r.data, "dataSubject"))
        .unwrap_or_default();
    let (consent_id, notice_id) = pinned_ids(versions);
    let mut consents = HashMap::new();
    if let Some(id) = consent_id {
        consents.insert(id, consent.to_vec());
    }
    let mut notices = HashMap::new();
    if let Some(id) = notice_id {
        notices.insert(id, notice.to_vec());
    }
    let mut events = Vec::new();
    acceptance_events(
        &sorted,
        &consents,
        &notices,
        DateTime::<Utc>::MAX_UTC,
        &mut events,
    );
    events
        .into_iter()
        .map(|event| {
            let rank = match (&event.kind, &event.reason) {
                (EventKind::Expired, _) => Some(0),
                (EventKind::ReconsentRequired, Some(Reason::NewNoticeRevision)) => Some(2),
                (EventKind::ReconsentRequired, _) => Some(1),
                _ => None,
            };
            HistoryRow {
                subject: subject.clone(),
                derived: rank.is_some(),
                ord: match rank {
                    Some(r) => first_seq.saturating_mul(3).saturating_add(r),
                    None => event.seq.unwrap_or_default(),
                },
                of_acceptance: true,
                event,
            }
        })
        .collect()
}

/// The row of a purpose event.
pub fn purpose_row(p: &PurposeEvent) -> HistoryRow {
    HistoryRow {
        subject: p.data_subject.clone(),
        derived: false,
        ord: p.seq,
        of_acceptance: false,
        event: purpose_event(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::consent::evidence::subject_events;
    use crate::core::consent::ContentType;
    use chrono::{Duration, TimeZone};
    use serde_json::{json, Map, Value};

    fn t(h: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Duration::hours(h)
    }

    fn record(
        t_: ContentType,
        id: &str,
        version: i64,
        seq: i64,
        at: i64,
        data: Value,
    ) -> ContentRecord {
        let Value::Object(data) = data else {
            return record(t_, id, version, seq, at, Value::Object(Map::new()));
        };
        ContentRecord {
            id: id.into(),
            project_id: "p".into(),
            content_type: t_,
            version,
            seq,
            created_by: "a".into(),
            last_modified_by: "a".into(),
            created_date: t(at),
            last_modified_date: t(at),
            data,
        }
    }

    /// Rows sorted and filtered at `now` are exactly `subject_events` at
    /// `now`, for instants before, between and after the derived events.
    #[test]
    fn rows_give_the_events_of_every_instant() {
        let acc = |id: &str, v, seq, at, status: &str, expiry: &str| {
            record(
                ContentType::ConsentAcceptance,
                id,
                v,
                seq,
                at,
                json!({"dataSubject": "u", "consentApplication": "shop", "consentId": "c",
                       "consentRevision": 1, "privacyNoticeId": "n", "privacyNoticeRevision": 1,
                       "status": status, "expiredDate": expiry, "purposes": ["e"]}),
            )
        };
        let rev = |t_, id: &str, v, seq, at, revision| {
            record(t_, id, v, seq, at, json!({"revision": revision}))
        };
        let acceptances = vec![
            acc("a1", 1, 3, 1, "ACCEPTED", "2026-01-01T10:00:00Z"),
            acc("a2", 1, 4, 2, "ACCEPTED", "2026-01-01T10:00:00Z"),
            acc("a2", 2, 7, 6, "WITHDRAWN", "2026-01-01T10:00:00Z"),
        ];
        let consent = vec![
            rev(ContentType::Consent, "c", 1, 1, 0, 1),
            rev(ContentType::Consent, "c", 2, 5, 4, 2),
        ];
        let notice = vec![
            rev(ContentType::PrivacyNotice, "n", 1, 2, 0, 1),
            rev(ContentType::PrivacyNotice, "n", 2, 6, 4, 2),
        ];
        let mut rows = Vec::new();
        for id in ["a1", "a2"] {
            let versions: Vec<ContentRecord> =
                acceptances.iter().filter(|r| r.id == id).cloned().collect();
            assert_eq!(pinned_ids(&versions), (Some("c".into()), Some("n".into())));
            rows.extend(acceptance_rows(&versions, &consent, &notice));
        }
        rows.sort_by_key(HistoryRow::key);
        let consents: super::super::evidence::Versions =
            [("c".to_owned(), consent.clone())].into_iter().collect();
        let notices: super::super::evidence::Versions =
            [("n".to_owned(), notice.clone())].into_iter().collect();
        for now in [t(0), t(3), t(4), t(5), t(10), t(11)] {
            let want = subject_events(&acceptances, &[], &consents, &notices, now);
            let got: Vec<SubjectEvent> = rows
                .iter()
                .filter(|r| r.visible_at(now))
                .map(|r| r.event.clone())
                .collect();
            assert_eq!(got, want, "at {now}");
        }
        assert!(rows.iter().all(|r| r.subject == "u" && r.of_acceptance));
    }
}
