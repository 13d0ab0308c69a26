//! A data subject's consent history as events: what happened to their
//! consents and purposes, in the order the server recorded it, with what
//! they were shown (consent and notice revisions) and the device context.
//!
//! Pure: [`subject_events`] reads the subject's stored records (every
//! version of their acceptances and every purpose event) and the version
//! histories of the consents and notices those acceptances pin, and
//! returns events. Three kinds are derived rather than stored:
//!
//! - `EXPIRED`: an acceptance whose `expiredDate` passed (at or before
//!   "now") while it was still accepted, dated at its `expiredDate`;
//! - `RECONSENT_REQUIRED`: a new revision of the accepted consent
//!   (`reason` `NEW_REVISION`), or of its privacy notice
//!   (`NEW_NOTICE_REVISION`), recorded while the acceptance was in force,
//!   dated when that revision was recorded — from then on to-accept offers
//!   the consent again. One per acceptance and reason: the first such
//!   revision.
//! - Every other kind is one stored record: an acceptance's version 1
//!   (`ACCEPTED`), a version that moves it to `WITHDRAWN` (`WITHDRAWN`),
//!   any other version (`UPDATED`: a note changed), a purpose acceptance
//!   (`PURPOSE_ACCEPTED`) or withdrawal (`PURPOSE_WITHDRAWN`).
//!
//! Events are ordered by their instant, then by the store's `seq` (derived
//! events, which have none, after stored ones of the same instant).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::content::{get_i64, get_str, get_string, get_strings, get_time, ContentRecord};
use super::model::{AcceptanceStatus, PurposeEvent, Reason};
use crate::core::page::{Page, DEFAULT_PAGE_SIZE};
use crate::string_enum;

string_enum! {
    /// What happened.
    pub enum EventKind {
        /// A consent was accepted (an acceptance record was created).
        Accepted = "ACCEPTED",
        /// An acceptance was withdrawn.
        Withdrawn = "WITHDRAWN",
        /// An acceptance was edited without a change of status (its note).
        Updated = "UPDATED",
        /// A purpose was accepted on its own.
        PurposeAccepted = "PURPOSE_ACCEPTED",
        /// A purpose was withdrawn.
        PurposeWithdrawn = "PURPOSE_WITHDRAWN",
        /// An acceptance reached its `expiredDate` while accepted.
        Expired = "EXPIRED",
        /// A new revision of the consent or of its notice was published
        /// while the acceptance was in force: the subject is asked again.
        ReconsentRequired = "RECONSENT_REQUIRED",
    }
}

/// The device and client context an acceptance was recorded with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeviceContext {
    /// `userAgent`.
    pub user_agent: String,
    /// `country`.
    pub country: String,
    /// `localIp`.
    pub local_ip: String,
    /// `osVersion`.
    pub os_version: String,
    /// `model`.
    pub model: String,
    /// `deviceFingerprintId`.
    pub device_fingerprint_id: String,
}

impl DeviceContext {
    fn of(r: &ContentRecord) -> Self {
        let s = |k: &str| get_str(&r.data, k).unwrap_or_default().to_owned();
        DeviceContext {
            user_agent: s("userAgent"),
            country: s("country"),
            local_ip: s("localIp"),
            os_version: s("osVersion"),
            model: s("model"),
            device_fingerprint_id: s("deviceFingerprintId"),
        }
    }
}

/// One event of a subject's consent history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SubjectEvent {
    /// What happened.
    pub kind: EventKind,
    /// When: the time the server recorded it (for `EXPIRED`, the expiry;
    /// for `RECONSENT_REQUIRED`, when the new revision was recorded).
    pub at: DateTime<Utc>,
    /// The store's position of the record (`null` for derived events).
    pub seq: Option<i64>,
    /// The application.
    pub application: String,
    /// The acceptance id (acceptance events) or purpose event id.
    pub record_id: String,
    /// The acceptance version (acceptance events).
    pub version: Option<i64>,
    /// The consent (a purpose withdrawal names none).
    pub consent_id: Option<String>,
    /// The consent revision accepted.
    pub consent_revision: Option<i64>,
    /// The privacy notice shown.
    pub privacy_notice_id: Option<String>,
    /// Its revision: the text version the subject was shown.
    pub privacy_notice_revision: Option<i64>,
    /// The purposes concerned.
    pub purposes: Vec<String>,
    /// The status after the event (stored events).
    pub status: Option<AcceptanceStatus>,
    /// `acceptanceDate`.
    pub acceptance_date: Option<DateTime<Utc>>,
    /// `expiredDate` (`null`: never, or not known).
    pub expired_date: Option<DateTime<Utc>>,
    /// `withdrawalDate`.
    pub withdrawal_date: Option<DateTime<Utc>>,
    /// Why the subject is asked again (`RECONSENT_REQUIRED` only):
    /// `NEW_REVISION` or `NEW_NOTICE_REVISION`.
    pub reason: Option<Reason>,
    /// The revision that asks again (`RECONSENT_REQUIRED` only).
    pub new_revision: Option<i64>,
    /// The device context (acceptance events).
    pub device: Option<DeviceContext>,
    /// The acceptance's note (acceptance events).
    pub note: Option<String>,
    /// Who recorded it (`sub` of the token; acceptance events).
    pub recorded_by: Option<String>,
}

impl SubjectEvent {
    fn blank(kind: EventKind, at: DateTime<Utc>, application: &str, record_id: &str) -> Self {
        SubjectEvent {
            kind,
            at,
            seq: None,
            application: application.to_owned(),
            record_id: record_id.to_owned(),
            version: None,
            consent_id: None,
            consent_revision: None,
            privacy_notice_id: None,
            privacy_notice_revision: None,
            purposes: Vec::new(),
            status: None,
            acceptance_date: None,
            expired_date: None,
            withdrawal_date: None,
            reason: None,
            new_revision: None,
            device: None,
            note: None,
            recorded_by: None,
        }
    }
}

/// Which events of a history to return, and which page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryQuery {
    /// Only events of this application.
    pub app: Option<String>,
    /// Only events of this consent (purpose acceptances name the consent
    /// whose lifespan they took; purpose withdrawals name none).
    pub consent_id: Option<String>,
    /// Only events at or after this instant.
    pub from: Option<DateTime<Utc>>,
    /// Only events before this instant.
    pub to: Option<DateTime<Utc>>,
    /// Zero-based page.
    pub page: u32,
    /// Page size, 1 to [`MAX_PAGE_SIZE`](crate::core::page::MAX_PAGE_SIZE).
    pub size: u32,
}

impl Default for HistoryQuery {
    fn default() -> Self {
        HistoryQuery {
            app: None,
            consent_id: None,
            from: None,
            to: None,
            page: 0,
            size: DEFAULT_PAGE_SIZE,
        }
    }
}

impl HistoryQuery {
    /// Whether an event passes the filters.
    pub fn matches(&self, e: &SubjectEvent) -> bool {
        self.app.as_ref().is_none_or(|a| *a == e.application)
            && self
                .consent_id
                .as_ref()
                .is_none_or(|c| e.consent_id.as_ref() == Some(c))
            && self.from.is_none_or(|f| e.at >= f)
            && self.to.is_none_or(|t| e.at < t)
    }

    /// The page of `events` (already in history order) this query asks for.
    pub fn page_of(&self, events: Vec<SubjectEvent>) -> Page<SubjectEvent> {
        let matching: Vec<SubjectEvent> = events.into_iter().filter(|e| self.matches(e)).collect();
        let total = matching.len() as u64;
        let skip =
            usize::try_from(u64::from(self.page) * u64::from(self.size)).unwrap_or(usize::MAX);
        Page {
            items: matching
                .into_iter()
                .skip(skip)
                .take(self.size as usize)
                .collect(),
            page: self.page,
            size: self.size,
            total,
        }
    }
}

/// Version histories of the consents and notices that acceptances pin, by
/// id, each oldest first.
pub type Versions = HashMap<String, Vec<ContentRecord>>;

/// Acceptance versions grouped by acceptance id, each group in `seq` order,
/// groups in the order of their first version.
fn by_acceptance(acceptances: &[ContentRecord]) -> Vec<Vec<&ContentRecord>> {
    let mut order: Vec<&str> = Vec::new();
    let mut groups: HashMap<&str, Vec<&ContentRecord>> = HashMap::new();
    for r in acceptances {
        let g = groups.entry(r.id.as_str()).or_default();
        if g.is_empty() {
            order.push(r.id.as_str());
        }
        g.push(r);
    }
    order
        .into_iter()
        .filter_map(|id| groups.remove(id))
        .map(|mut g| {
            g.sort_by_key(|r| r.seq);
            g
        })
        .collect()
}

/// The evidence of one version, falling back to the latest earlier value
/// for pins an old edit nulled (see `docs/consent.md`, "Checking stored
/// records").
#[derive(Default, Clone)]
pub(super) struct Pins {
    application: String,
    pub(super) consent_id: Option<String>,
    consent_revision: Option<i64>,
    pub(super) notice_id: Option<String>,
    notice_revision: Option<i64>,
    purposes: Vec<String>,
    acceptance_date: Option<DateTime<Utc>>,
    expired_date: Option<DateTime<Utc>>,
}

impl Pins {
    pub(super) fn update(&mut self, r: &ContentRecord) {
        let d = &r.data;
        if let Some(a) =
            get_string(d, "consentApplication").or_else(|| get_string(d, "application"))
        {
            self.application = a;
        }
        self.consent_id = get_string(d, "consentId").or(self.consent_id.take());
        self.consent_revision = get_i64(d, "consentRevision").or(self.consent_revision);
        self.notice_id = get_string(d, "privacyNoticeId").or(self.notice_id.take());
        self.notice_revision = get_i64(d, "privacyNoticeRevision").or(self.notice_revision);
        if let Some(p) = get_strings(d, "purposes") {
            self.purposes = p;
        }
        self.acceptance_date = get_time(d, "acceptanceDate").or(self.acceptance_date);
        self.expired_date = get_time(d, "expiredDate").or(self.expired_date);
    }
}

pub(super) fn acceptance_events(
    versions: &[&ContentRecord],
    consents: &Versions,
    notices: &Versions,
    now: DateTime<Utc>,
    out: &mut Vec<SubjectEvent>,
) {
    let mut pins = Pins::default();
    let mut status = None;
    let mut accepted_at = None;
    let mut ended_at = None;
    for r in versions {
        pins.update(r);
        let new_status = AcceptanceStatus::parse(get_str(&r.data, "status").unwrap_or_default());
        let kind = match (&status, &new_status) {
            (None | Some(AcceptanceStatus::Accepted), AcceptanceStatus::Withdrawn) => {
                EventKind::Withdrawn
            }
            (None, _) => EventKind::Accepted,
            _ => EventKind::Updated,
        };
        match kind {
            EventKind::Accepted => accepted_at = Some(r.last_modified_date),
            EventKind::Withdrawn if ended_at.is_none() => ended_at = Some(r.last_modified_date),
            _ => {}
        }
        let mut e = SubjectEvent::blank(kind, r.last_modified_date, &pins.application, &r.id);
        e.seq = Some(r.seq);
        e.version = Some(r.version);
        e.consent_id.clone_from(&pins.consent_id);
        e.consent_revision = pins.consent_revision;
        e.privacy_notice_id.clone_from(&pins.notice_id);
        e.privacy_notice_revision = pins.notice_revision;
        e.purposes.clone_from(&pins.purposes);
        e.status = Some(new_status.clone());
        e.acceptance_date = pins.acceptance_date;
        e.expired_date = pins.expired_date;
        e.withdrawal_date = get_time(&r.data, "withdrawalDate");
        e.device = Some(DeviceContext::of(r));
        e.note = get_str(&r.data, "note").map(str::to_owned);
        e.recorded_by = Some(r.last_modified_by.clone());
        out.push(e);
        status = Some(new_status);
    }
    let (Some(start), Some(last)) = (accepted_at, versions.last()) else {
        return;
    };
    // The acceptance was in force from `start` until withdrawn or expired.
    let mut end = ended_at;
    if let Some(expiry) = pins.expired_date.filter(|e| *e <= now) {
        if end.is_none_or(|w| expiry < w) {
            let mut e =
                SubjectEvent::blank(EventKind::Expired, expiry, &pins.application, &last.id);
            e.version = Some(last.version);
            e.consent_id.clone_from(&pins.consent_id);
            e.consent_revision = pins.consent_revision;
            e.privacy_notice_id.clone_from(&pins.notice_id);
            e.privacy_notice_revision = pins.notice_revision;
            e.purposes.clone_from(&pins.purposes);
            e.acceptance_date = pins.acceptance_date;
            e.expired_date = Some(expiry);
            out.push(e);
            end = Some(expiry);
        }
    }
    let in_force = |t: DateTime<Utc>| t >= start && t <= now && end.is_none_or(|x| t < x);
    let found = [
        (
            Reason::NewRevision,
            first_newer(
                pins.consent_id.as_ref(),
                consents,
                pins.consent_revision,
                &in_force,
            ),
        ),
        (
            Reason::NewNoticeRevision,
            first_newer(
                pins.notice_id.as_ref(),
                notices,
                pins.notice_revision,
                &in_force,
            ),
        ),
    ];
    for (reason, version) in found {
        if let Some(v) = version {
            let mut e = SubjectEvent::blank(
                EventKind::ReconsentRequired,
                v.last_modified_date,
                &pins.application,
                &last.id,
            );
            e.version = Some(last.version);
            e.consent_id.clone_from(&pins.consent_id);
            e.consent_revision = pins.consent_revision;
            e.privacy_notice_id.clone_from(&pins.notice_id);
            e.privacy_notice_revision = pins.notice_revision;
            e.purposes.clone_from(&pins.purposes);
            e.reason = Some(reason);
            e.new_revision = get_i64(&v.data, "revision");
            out.push(e);
        }
    }
}

/// The first version of record `id` recorded while `in_force` holds whose
/// `revision` is above `pinned`.
fn first_newer<'a>(
    id: Option<&String>,
    histories: &'a Versions,
    pinned: Option<i64>,
    in_force: &dyn Fn(DateTime<Utc>) -> bool,
) -> Option<&'a ContentRecord> {
    let (history, pinned) = (histories.get(id?)?, pinned?);
    history.iter().find(|v| {
        in_force(v.last_modified_date) && get_i64(&v.data, "revision").is_some_and(|n| n > pinned)
    })
}

pub(super) fn purpose_event(p: &PurposeEvent) -> SubjectEvent {
    let kind = match p.status {
        AcceptanceStatus::Withdrawn => EventKind::PurposeWithdrawn,
        _ => EventKind::PurposeAccepted,
    };
    let mut e = SubjectEvent::blank(kind, p.recorded_at, &p.app, &p.id);
    e.seq = Some(p.seq);
    e.consent_id.clone_from(&p.consent_id);
    e.purposes = vec![p.purpose_code.clone()];
    e.status = Some(p.status.clone());
    e.acceptance_date = p.acceptance_date;
    e.expired_date = p.expired_date;
    e.withdrawal_date = p.withdrawal_date;
    e
}

/// A subject's history as events, in order (see the module docs).
/// `acceptances`: every version of the subject's acceptances; `purposes`:
/// their purpose events; `consents`, `notices`: version histories of the
/// consents and notices those acceptances pin (missing ones give no
/// `RECONSENT_REQUIRED`); `now`: derived events after it are left out.
pub fn subject_events(
    acceptances: &[ContentRecord],
    purposes: &[PurposeEvent],
    consents: &Versions,
    notices: &Versions,
    now: DateTime<Utc>,
) -> Vec<SubjectEvent> {
    let mut out = Vec::new();
    for versions in by_acceptance(acceptances) {
        acceptance_events(&versions, consents, notices, now, &mut out);
    }
    out.extend(purposes.iter().map(purpose_event));
    out.sort_by_key(|e| (e.at, e.seq.is_none(), e.seq));
    out
}

#[cfg(test)]
#[path = "evidence_tests.rs"]
mod tests;
