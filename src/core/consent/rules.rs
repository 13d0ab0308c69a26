//! The consent rules, pure: functions over loaded records and an instant.
//! No I/O, no clock — the service loads, calls these, and stores.
//!
//! # Time
//!
//! Every record has the time the service **recorded** it (`lastModifiedDate`
//! of a content version, `recordedAt` of a purpose event) and the store's
//! `seq`. "Latest" always means the greatest `(recorded time, seq)`, and the
//! state at `t` only sees records recorded at or before `t`. Dates written
//! by clients (`acceptanceDate`, `withdrawalDate`) are kept as evidence but
//! never reorder history; `expiredDate` decides expiry: a grant is in force
//! at `t` while `expiredDate` is `null` or after `t`. (What clients may
//! write at all is [`super::integrity`]'s part.)
//!
//! # An acceptance at `t`
//!
//! A consent acceptance is a content record with versions. Its state at `t`
//! folds its versions recorded up to `t`: the status is the latest
//! version's; every other fact (purposes, `expiredDate`, the pins
//! `consentRevision`, `privacyNoticeId`, `privacyNoticeRevision`, …) is its
//! **latest non-null value**. An edit keeps every such fact
//! ([`super::integrity::acceptance_update`]), so for every record written
//! by this crate that is simply the current version's value — what a `GET`
//! shows. The fold also reads records that earlier versions of the crate
//! wrote, when an edit in the update form nulled those facts, as what had
//! been granted (a withdrawal must not erase it); [`super::check`] reports
//! such records. The acceptance's
//! *status changes* (its creation, and each version whose status differs
//! from the previous one) are its events; a PUT that only edits the note is
//! not an event.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::BuildHasher;

use chrono::{DateTime, Utc};

use super::content::{get_i64, get_str, get_string, get_strings, get_time, ContentRecord};
use super::integrity;
pub use super::model::{expiry, is_expired};
use super::model::{
    AcceptanceStatus, AgreedConsent, AgreedPurpose, Consent, GrantSource, HistoryEntry,
    PrivacyNotice, PurposeEvent, PurposeName, PurposeOption, Reason, SubjectState, ToAccept,
};

/// One version of a consent-acceptance record, as the rules read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptanceVersion {
    /// Acceptance id.
    pub id: String,
    /// Version number.
    pub version: i64,
    /// Store order.
    pub seq: i64,
    /// When this version was recorded.
    pub recorded_at: DateTime<Utc>,
    /// The subject.
    pub data_subject: String,
    /// The consent.
    pub consent_id: String,
    /// Status of this version.
    pub status: AcceptanceStatus,
    /// `acceptanceDate`.
    pub acceptance_date: Option<DateTime<Utc>>,
    /// `expiredDate`.
    pub expired_date: Option<DateTime<Utc>>,
    /// `withdrawalDate`.
    pub withdrawal_date: Option<DateTime<Utc>>,
    /// `purposes` (`None` when null).
    pub purposes: Option<Vec<String>>,
    /// `consentRevision`.
    pub consent_revision: Option<i64>,
    /// `privacyNoticeId`.
    pub privacy_notice_id: Option<String>,
    /// `privacyNoticeRevision`.
    pub privacy_notice_revision: Option<i64>,
    /// `consentApplication` (or the update form's `application`).
    pub consent_application: Option<String>,
}

impl AcceptanceVersion {
    /// Reads one stored version.
    pub fn from_record(r: &ContentRecord) -> Self {
        let d = &r.data;
        AcceptanceVersion {
            id: r.id.clone(),
            version: r.version,
            seq: r.seq,
            recorded_at: r.last_modified_date,
            data_subject: get_str(d, "dataSubject").unwrap_or_default().to_owned(),
            consent_id: get_str(d, "consentId").unwrap_or_default().to_owned(),
            status: AcceptanceStatus::parse(get_str(d, "status").unwrap_or_default()),
            acceptance_date: get_time(d, "acceptanceDate"),
            expired_date: get_time(d, "expiredDate"),
            withdrawal_date: get_time(d, "withdrawalDate"),
            purposes: get_strings(d, "purposes"),
            consent_revision: get_i64(d, "consentRevision"),
            privacy_notice_id: get_string(d, "privacyNoticeId"),
            privacy_notice_revision: get_i64(d, "privacyNoticeRevision"),
            consent_application: get_string(d, "consentApplication")
                .or_else(|| get_string(d, "application")),
        }
    }
}

/// A status change of an acceptance: when recorded, and to what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusChange {
    /// When recorded.
    pub at: DateTime<Utc>,
    /// Store order.
    pub seq: i64,
    /// The new status.
    pub status: AcceptanceStatus,
}

/// One acceptance as it stood at an instant (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptanceState {
    /// Acceptance id.
    pub id: String,
    /// The consent.
    pub consent_id: String,
    /// Status of the latest version.
    pub status: AcceptanceStatus,
    /// Latest non-null `consentRevision`.
    pub consent_revision: Option<i64>,
    /// Latest non-null `acceptanceDate`.
    pub acceptance_date: Option<DateTime<Utc>>,
    /// Latest non-null `expiredDate`.
    pub expired_date: Option<DateTime<Utc>>,
    /// Latest non-null `withdrawalDate`, when withdrawn.
    pub withdrawal_date: Option<DateTime<Utc>>,
    /// Latest non-null `purposes`.
    pub purposes: Vec<String>,
    /// Latest non-null `privacyNoticeId`.
    pub privacy_notice_id: Option<String>,
    /// Latest non-null `privacyNoticeRevision`.
    pub privacy_notice_revision: Option<i64>,
    /// Latest non-null `consentApplication`.
    pub consent_application: Option<String>,
    /// Its status changes, oldest first (never empty).
    pub changes: Vec<StatusChange>,
}

impl AcceptanceState {
    /// Whether it grants its consent at `t`.
    pub fn in_force(&self, t: DateTime<Utc>) -> bool {
        self.status == AcceptanceStatus::Accepted && !is_expired(self.expired_date, t)
    }

    /// Whether it counts in application `app`: an acceptance counts only
    /// in the application it names (one recorded without a name counts in
    /// the application of its consent).
    pub fn counts_in(&self, app: &str) -> bool {
        self.consent_application.as_deref().is_none_or(|a| a == app)
    }

    /// Its latest status change.
    pub fn last_change(&self) -> (DateTime<Utc>, i64) {
        self.changes
            .last()
            .map_or((DateTime::<Utc>::MIN_UTC, 0), |c| (c.at, c.seq))
    }
}

/// Every acceptance as it stood at `t`, from the versions of any number of
/// acceptances (in any order). Acceptances with no version recorded by `t`
/// are left out. The result is ordered by id.
pub fn acceptances_at(versions: &[AcceptanceVersion], t: DateTime<Utc>) -> Vec<AcceptanceState> {
    let mut sorted: Vec<&AcceptanceVersion> =
        versions.iter().filter(|v| v.recorded_at <= t).collect();
    sorted.sort_by(|a, b| a.id.cmp(&b.id).then(a.version.cmp(&b.version)));
    let mut out: Vec<AcceptanceState> = Vec::new();
    for v in sorted {
        match out.last_mut() {
            Some(s) if s.id == v.id => {
                if s.status != v.status {
                    s.changes.push(StatusChange {
                        at: v.recorded_at,
                        seq: v.seq,
                        status: v.status.clone(),
                    });
                }
                s.status = v.status.clone();
                s.consent_revision = v.consent_revision.or(s.consent_revision);
                s.acceptance_date = v.acceptance_date.or(s.acceptance_date);
                s.expired_date = v.expired_date.or(s.expired_date);
                s.withdrawal_date = v.withdrawal_date.or(s.withdrawal_date);
                if let Some(p) = &v.purposes {
                    s.purposes.clone_from(p);
                }
                if v.privacy_notice_id.is_some() {
                    s.privacy_notice_id.clone_from(&v.privacy_notice_id);
                }
                s.privacy_notice_revision = v.privacy_notice_revision.or(s.privacy_notice_revision);
                if v.consent_application.is_some() {
                    s.consent_application.clone_from(&v.consent_application);
                }
            }
            _ => out.push(AcceptanceState {
                id: v.id.clone(),
                consent_id: v.consent_id.clone(),
                status: v.status.clone(),
                consent_revision: v.consent_revision,
                acceptance_date: v.acceptance_date,
                expired_date: v.expired_date,
                withdrawal_date: v.withdrawal_date,
                purposes: v.purposes.clone().unwrap_or_default(),
                privacy_notice_id: v.privacy_notice_id.clone(),
                privacy_notice_revision: v.privacy_notice_revision,
                consent_application: v.consent_application.clone(),
                changes: vec![StatusChange {
                    at: v.recorded_at,
                    seq: v.seq,
                    status: v.status.clone(),
                }],
            }),
        }
    }
    for s in &mut out {
        if s.status != AcceptanceStatus::Withdrawn {
            s.withdrawal_date = None;
        }
    }
    out
}

/// The privacy notice of `consent` among `notices`.
pub fn notice_of<'a>(consent: &Consent, notices: &'a [PrivacyNotice]) -> Option<&'a PrivacyNotice> {
    notices.iter().find(|n| n.id == consent.privacy_notice_ref)
}

/// Whether `a` pins what `consent` currently shows: its revision, its
/// privacy notice and that notice's current revision.
fn is_current(a: &AcceptanceState, consent: &Consent, notice: Option<&PrivacyNotice>) -> bool {
    a.consent_revision == Some(consent.revision) && shows_notice(a, consent, notice)
}

fn shows_notice(a: &AcceptanceState, consent: &Consent, notice: Option<&PrivacyNotice>) -> bool {
    a.privacy_notice_id.as_deref() == Some(consent.privacy_notice_ref.as_str())
        && a.privacy_notice_revision == notice.map(|n| n.revision)
}

/// Why `consent` (with its privacy notice `notice`) is still to accept,
/// given the subject's acceptances at `now` (of any consent); `None` when
/// an acceptance in force pins the consent's current revision and its
/// notice's current revision. Only acceptances that name the consent's
/// application count.
///
/// The reason comes from the acceptance of this consent whose status
/// changed last: withdrawn → `WITHDRAWN`; of another consent revision →
/// `NEW_REVISION`; of another notice revision → `NEW_NOTICE_REVISION`;
/// else `EXPIRED`. No acceptance at all → `NEW`.
pub fn reason(
    consent: &Consent,
    notice: Option<&PrivacyNotice>,
    acceptances: &[AcceptanceState],
    now: DateTime<Utc>,
) -> Option<Reason> {
    let mine: Vec<&AcceptanceState> = acceptances
        .iter()
        .filter(|a| a.consent_id == consent.id && a.counts_in(&consent.application))
        .collect();
    if mine
        .iter()
        .any(|a| a.in_force(now) && is_current(a, consent, notice))
    {
        return None;
    }
    let Some(latest) = mine.iter().max_by_key(|a| a.last_change()) else {
        return Some(Reason::New);
    };
    Some(if latest.status != AcceptanceStatus::Accepted {
        Reason::Withdrawn
    } else if latest.consent_revision != Some(consent.revision) {
        Reason::NewRevision
    } else if !shows_notice(latest, consent, notice) {
        Reason::NewNoticeRevision
    } else {
        Reason::Expired
    })
}

/// The to-accept list: every offered consent among `consents` (in their
/// order; `PUBLISHED` with a `PUBLISHED` notice among `notices`, see
/// [`integrity::is_offered`]) that [`reason`] lists.
pub fn to_accept(
    consents: &[Consent],
    notices: &[PrivacyNotice],
    acceptances: &[AcceptanceState],
    now: DateTime<Utc>,
) -> Vec<ToAccept> {
    consents
        .iter()
        .filter_map(|c| {
            let notice = notice_of(c, notices);
            if !integrity::is_offered(c, notice) {
                return None;
            }
            reason(c, notice, acceptances, now).map(|reason| ToAccept {
                consent: c.clone(),
                reason,
            })
        })
        .collect()
}

/// One event of a purpose's timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurposeMark {
    /// When recorded.
    pub at: DateTime<Utc>,
    /// Store order.
    pub seq: i64,
    /// An acceptance (else a withdrawal).
    pub accepted: bool,
    /// The grant's acceptance date.
    pub acceptance_date: Option<DateTime<Utc>>,
    /// The grant's expiry.
    pub expired_date: Option<DateTime<Utc>>,
    /// What recorded it.
    pub source: GrantSource,
    /// Its id.
    pub source_id: String,
}

fn by_time(a: &PurposeMark, b: &PurposeMark) -> Ordering {
    (a.at, a.seq).cmp(&(b.at, b.seq))
}

/// The timeline of one purpose of one subject in one application, up to
/// `t`, oldest first: the purpose events of (`app`, `code`), and the status
/// changes of the acceptances (as they stood at `t`) of the application's
/// consents (`app_consents`, any status) that list `code`.
pub fn purpose_timeline<H: BuildHasher>(
    app: &str,
    code: &str,
    app_consents: &HashSet<&str, H>,
    acceptances: &[AcceptanceState],
    events: &[PurposeEvent],
    t: DateTime<Utc>,
) -> Vec<PurposeMark> {
    let mut marks: Vec<PurposeMark> = events
        .iter()
        .filter(|e| e.app == app && e.purpose_code == code && e.recorded_at <= t)
        .map(|e| PurposeMark {
            at: e.recorded_at,
            seq: e.seq,
            accepted: e.status == AcceptanceStatus::Accepted,
            acceptance_date: e.acceptance_date,
            expired_date: e.expired_date,
            source: GrantSource::PurposeAcceptance,
            source_id: e.id.clone(),
        })
        .collect();
    for a in acceptances {
        if !app_consents.contains(a.consent_id.as_str())
            || !a.counts_in(app)
            || !a.purposes.iter().any(|p| p == code)
        {
            continue;
        }
        marks.extend(a.changes.iter().map(|c| PurposeMark {
            at: c.at,
            seq: c.seq,
            accepted: c.status == AcceptanceStatus::Accepted,
            acceptance_date: a.acceptance_date,
            expired_date: a.expired_date,
            source: GrantSource::ConsentAcceptance,
            source_id: a.id.clone(),
        }));
    }
    marks.sort_by(by_time);
    marks
}

/// Whether a timeline grants its purpose at `t`: its latest mark is an
/// acceptance that has not expired.
pub fn purpose_granted(timeline: &[PurposeMark], t: DateTime<Utc>) -> bool {
    timeline
        .last()
        .is_some_and(|m| m.accepted && !is_expired(m.expired_date, t))
}

/// The latest acceptance of a timeline (what a withdrawal ends).
pub fn latest_grant(timeline: &[PurposeMark]) -> Option<&PurposeMark> {
    timeline.iter().rev().find(|m| m.accepted)
}

/// The consent whose lifespan a purpose acceptance uses: the first
/// offered consent (in the given order) that lists `code`.
pub fn owning_consent<'a>(
    consents: &'a [Consent],
    notices: &[PrivacyNotice],
    code: &str,
) -> Option<&'a Consent> {
    consents.iter().find(|c| {
        integrity::is_offered(c, notice_of(c, notices)) && c.purposes.iter().any(|p| p == code)
    })
}

fn consent_ids(consents: &[Consent]) -> HashSet<&str> {
    consents.iter().map(|c| c.id.as_str()).collect()
}

/// The purpose options: one entry per purpose code of each offered
/// consent among `consents` (all consents of `app`, in order; see
/// [`to_accept`]), with the flag of [`purpose_granted`] at `now` and the
/// catalogue names (`names` in modification order: a later entry for a
/// code wins; empty strings when absent).
pub fn purpose_options(
    app: &str,
    consents: &[Consent],
    notices: &[PrivacyNotice],
    acceptances: &[AcceptanceState],
    events: &[PurposeEvent],
    names: &[PurposeName],
    now: DateTime<Utc>,
) -> Vec<PurposeOption> {
    let ids = consent_ids(consents);
    let names: HashMap<&str, &PurposeName> = names.iter().map(|n| (n.code.as_str(), n)).collect();
    let mut out = Vec::new();
    for c in consents
        .iter()
        .filter(|c| integrity::is_offered(c, notice_of(c, notices)))
    {
        for code in &c.purposes {
            let timeline = purpose_timeline(app, code, &ids, acceptances, events, now);
            let name = names.get(code.as_str());
            out.push(PurposeOption {
                code: code.clone(),
                accepted: purpose_granted(&timeline, now),
                name_en: name.map(|n| n.name_en.clone()).unwrap_or_default(),
                name_th: name.map(|n| n.name_th.clone()).unwrap_or_default(),
                consent_id: c.id.clone(),
            });
        }
    }
    out
}

/// What `subject` had agreed to in `app` at `t`: for each consent of the
/// application (any status, in order), the acceptance in force at `t` whose
/// status changed last; and every purpose (of the application's consents,
/// purpose events, or acceptances) whose timeline grants it at `t`.
/// `versions` are all versions of the subject's acceptances; `events` the
/// subject's purpose events.
pub fn state_at(
    app: &str,
    subject: &str,
    consents: &[Consent],
    versions: &[AcceptanceVersion],
    events: &[PurposeEvent],
    t: DateTime<Utc>,
) -> SubjectState {
    let acceptances = acceptances_at(versions, t);
    let ids = consent_ids(consents);
    let mut agreed = Vec::new();
    for c in consents {
        let best = acceptances
            .iter()
            .filter(|a| a.consent_id == c.id && a.counts_in(app) && a.in_force(t))
            .max_by_key(|a| a.last_change());
        if let Some(a) = best {
            agreed.push(AgreedConsent {
                consent_id: c.id.clone(),
                consent_revision: a.consent_revision,
                acceptance_id: a.id.clone(),
                acceptance_date: a.acceptance_date,
                expired_date: a.expired_date,
                privacy_notice_id: a.privacy_notice_id.clone(),
                privacy_notice_revision: a.privacy_notice_revision,
                purposes: a.purposes.clone(),
            });
        }
    }
    let mut codes: BTreeSet<&str> = consents
        .iter()
        .flat_map(|c| c.purposes.iter().map(String::as_str))
        .collect();
    codes.extend(
        events
            .iter()
            .filter(|e| e.app == app)
            .map(|e| e.purpose_code.as_str()),
    );
    codes.extend(
        acceptances
            .iter()
            .filter(|a| ids.contains(a.consent_id.as_str()) && a.counts_in(app))
            .flat_map(|a| a.purposes.iter().map(String::as_str)),
    );
    let mut purposes = Vec::new();
    for code in codes {
        let timeline = purpose_timeline(app, code, &ids, &acceptances, events, t);
        if purpose_granted(&timeline, t) {
            if let Some(m) = timeline.last() {
                purposes.push(AgreedPurpose {
                    code: code.to_owned(),
                    since: m.at,
                    expired_date: m.expired_date,
                    source: m.source.clone(),
                    source_id: m.source_id.clone(),
                });
            }
        }
    }
    SubjectState {
        at: t,
        data_subject: subject.to_owned(),
        application: app.to_owned(),
        consents: agreed,
        purposes,
    }
}

/// A subject's history: every version of their acceptances and every
/// purpose event, in the order recorded.
pub fn history(acceptances: Vec<ContentRecord>, events: Vec<PurposeEvent>) -> Vec<HistoryEntry> {
    let mut all: Vec<HistoryEntry> = acceptances
        .into_iter()
        .map(HistoryEntry::ConsentAcceptance)
        .chain(events.into_iter().map(HistoryEntry::Purpose))
        .collect();
    all.sort_by_key(|e| (e.recorded_at(), e.seq()));
    all
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
