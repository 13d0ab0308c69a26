//! The consent integrity rules: what a write may do to consent evidence,
//! whichever way it comes in (the application-facing routes or the content
//! store). Pure, like [`super::rules`]: the service passes what it read and
//! "now"; [`super::check`] replays the same rules over stored history.
//!
//! - **An acceptance is of the consent in force.** It needs a consent that
//!   is offered ([`not_offered`]: `PUBLISHED`, with a `PUBLISHED` privacy
//!   notice), of the application it names, and only that consent's
//!   purposes. Its evidence belongs to the server ([`acceptance_create`]):
//!   `consentRevision`, `privacyNoticeId` and `privacyNoticeRevision` are
//!   those in force, `receivedDate` is the server's clock, `expiredDate` is
//!   `acceptanceDate` + lifespan, and a client-written `acceptanceDate` lies
//!   neither in the future nor before the consent's revision came into force
//!   (each beyond [`clock_skew`]).
//! - **An acceptance only moves forward** ([`acceptance_update`]): from
//!   `ACCEPTED` to `WITHDRAWN` (the server sets `withdrawalDate`), never
//!   back; an edit changes `status` that way and `note`, nothing else. Every
//!   other attribute is evidence: repeated unchanged, or left out and kept.
//! - **Revisions only increase** ([`consent_update`], [`notice_update`]),
//!   and what a person agrees to — a consent's purposes, application and
//!   privacy notice — changes only with a new revision.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value};

use super::content::{format_time, get_i64, get_str, get_strings, get_time, ContentRecord};
use super::model::{AcceptanceStatus, Consent, NoticeStatus, PrivacyNotice};
use crate::core::error::ErrorCode;
use crate::core::error::Problems;
use crate::core::limits::MAX_CLOCK_SKEW_SECONDS;

/// How far a client clock may be off: an `acceptanceDate` up to this far
/// in the future, or before the consent's revision came into force, is
/// still accepted ([`MAX_CLOCK_SKEW_SECONDS`]).
pub fn clock_skew() -> Duration {
    Duration::seconds(MAX_CLOCK_SKEW_SECONDS)
}

/// The consent an acceptance is checked against, as it stood when the
/// acceptance was written.
#[derive(Debug, Clone, PartialEq)]
pub struct InForce {
    /// The consent.
    pub consent: Consent,
    /// When its current revision was first recorded.
    pub revision_since: DateTime<Utc>,
    /// Its privacy notice (`None`: there is none with that id).
    pub notice: Option<PrivacyNotice>,
}

impl InForce {
    /// From the consent's versions up to the write (oldest first; `None`
    /// when empty) and its privacy notice at that time.
    pub fn from_versions(
        versions: &[ContentRecord],
        notice: Option<PrivacyNotice>,
    ) -> Option<Self> {
        let last = versions.last()?;
        Some(InForce {
            consent: Consent::from_record(last),
            revision_since: revision_since(versions)?,
            notice,
        })
    }
}

/// When the revision of the last of `versions` (oldest first) was first
/// recorded: the first version of the trailing run with that revision.
pub fn revision_since(versions: &[ContentRecord]) -> Option<DateTime<Utc>> {
    let revision = |r: &ContentRecord| get_i64(&r.data, "revision");
    let last = revision(versions.last()?);
    versions
        .iter()
        .rev()
        .take_while(|v| revision(v) == last)
        .last()
        .map(|v| v.last_modified_date)
}

/// Why `consent` is not offered to data subjects — not `PUBLISHED`, or
/// its privacy notice missing or not `PUBLISHED` — as a code and a message;
/// `None` when it is offered.
pub fn not_offered(
    consent: &Consent,
    notice: Option<&PrivacyNotice>,
) -> Option<(ErrorCode, String)> {
    if !consent.is_published() {
        return Some((
            ErrorCode::ConsentNotPublished,
            format!(
                "consent {:?} is {}, only PUBLISHED consents can be accepted",
                consent.id, consent.status
            ),
        ));
    }
    match notice {
        Some(n) if n.status == NoticeStatus::Published => None,
        Some(n) => Some((
            ErrorCode::PrivacyNoticeNotPublished,
            format!(
                "the privacy notice {:?} of consent {:?} is {}; a consent is offered only with a PUBLISHED notice",
                n.id, consent.id, n.status
            ),
        )),
        None => Some((
            ErrorCode::PrivacyNoticeNotPublished,
            format!(
                "consent {:?} names privacy notice {:?}, which does not exist",
                consent.id, consent.privacy_notice_ref
            ),
        )),
    }
}

/// Whether `consent` is offered (see [`not_offered`]).
pub fn is_offered(consent: &Consent, notice: Option<&PrivacyNotice>) -> bool {
    not_offered(consent, notice).is_none()
}

/// The problem of each code that is not a purpose of `consent`, at
/// `{path}[i]`.
pub fn unknown_purposes<'a>(
    consent: &Consent,
    codes: impl IntoIterator<Item = &'a str>,
    path: &str,
    problems: &mut Problems,
) {
    for (i, code) in codes.into_iter().enumerate() {
        if !consent.purposes.iter().any(|p| p == code) {
            problems.push(
                format!("{path}[{i}]"),
                ErrorCode::UnknownPurpose,
                format!("{code:?} is not a purpose of consent {:?}", consent.id),
            );
        }
    }
}

/// Two attribute values, a missing one being `null`.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    a.unwrap_or(&Value::Null) == b.unwrap_or(&Value::Null)
}

/// Checks a validated acceptance `data` of the create form against the
/// consent in force at `now`, adding every problem, and fills the
/// evidence the server owns: `consentRevision`, `privacyNoticeId`,
/// `privacyNoticeRevision` when left out (a differing value is 422
/// `evidence_mismatch`), and `receivedDate` (`now`; the client may not
/// choose it). `language` (the text shown) defaults to the notice's
/// ([`PrivacyNotice::language`](super::model::PrivacyNotice::language)).
pub fn acceptance_create(
    data: &mut Map<String, Value>,
    in_force: &InForce,
    now: DateTime<Utc>,
    problems: &mut Problems,
) {
    let consent = &in_force.consent;
    if let Some((code, message)) = not_offered(consent, in_force.notice.as_ref()) {
        problems.push("data.consentId", code, message);
    }
    if let Some(app) = get_str(data, "consentApplication") {
        if app != consent.application {
            problems.push(
                "data.consentApplication",
                ErrorCode::ConsentNotInApp,
                format!(
                    "consent {:?} belongs to application {:?}, not {app:?}",
                    consent.id, consent.application
                ),
            );
        }
    }
    if let Some(Value::Array(codes)) = data.get("purposes") {
        unknown_purposes(
            consent,
            codes.iter().filter_map(Value::as_str),
            "data.purposes",
            problems,
        );
    }
    if AcceptanceStatus::parse(get_str(data, "status").unwrap_or_default())
        == AcceptanceStatus::Withdrawn
    {
        problems.push(
            "data.status",
            ErrorCode::InvalidTransition,
            "an acceptance is created ACCEPTED; withdraw it afterwards with a PUT of status WITHDRAWN",
        );
    }
    let notice_revision = in_force.notice.as_ref().map(|n| n.revision);
    for (name, value, why) in [
        (
            "consentRevision",
            Value::from(consent.revision),
            "the consent's current revision",
        ),
        (
            "privacyNoticeId",
            Value::from(consent.privacy_notice_ref.clone()),
            "the consent's privacy notice",
        ),
        (
            "privacyNoticeRevision",
            Value::from(notice_revision),
            "the privacy notice's current revision",
        ),
    ] {
        match data.get(name) {
            None | Some(Value::Null) => {
                data.insert(name.to_owned(), value);
            }
            Some(sent) if *sent == value => {}
            Some(sent) => problems.push(
                format!("data.{name}"),
                ErrorCode::EvidenceMismatch,
                format!("must be {value} ({why}) or be left out; found {sent}"),
            ),
        }
    }
    if matches!(data.get("language"), None | Some(Value::Null)) {
        let language = in_force.notice.as_ref().map_or("und", |n| n.language());
        data.insert("language".to_owned(), language.into());
    }
    let received = Value::from(format_time(now));
    match data.get("receivedDate") {
        None | Some(Value::Null) => {
            data.insert("receivedDate".to_owned(), received);
        }
        Some(sent) if *sent == received => {}
        Some(_) => problems.push(
            "data.receivedDate",
            ErrorCode::EvidenceMismatch,
            "receivedDate is when the server received the acceptance; leave it out",
        ),
    }
    check_dates(data, in_force, now, problems);
}

/// `acceptanceDate` within the clock skew of `now` and of the revision,
/// and `expiredDate` = `acceptanceDate` + lifespan.
fn check_dates(
    data: &Map<String, Value>,
    in_force: &InForce,
    now: DateTime<Utc>,
    problems: &mut Problems,
) {
    let Some(accepted) = get_time(data, "acceptanceDate") else {
        return; // missing or invalid: already reported
    };
    if accepted > now + clock_skew() {
        problems.push(
            "data.acceptanceDate",
            ErrorCode::InFuture,
            format!(
                "{} is in the future (the server's clock reads {}; up to {} seconds ahead are accepted)",
                format_time(accepted),
                format_time(now),
                MAX_CLOCK_SKEW_SECONDS
            ),
        );
    }
    if accepted < in_force.revision_since - clock_skew() {
        problems.push(
            "data.acceptanceDate",
            ErrorCode::BeforeRevision,
            format!(
                "{} is before revision {} of the consent came into force ({})",
                format_time(accepted),
                in_force.consent.revision,
                format_time(in_force.revision_since)
            ),
        );
    }
    let sent = match data.get("expiredDate") {
        Some(Value::Null) => None,
        Some(Value::String(s)) => match super::content::parse_time(s) {
            Some(t) => Some(t),
            None => return, // already reported
        },
        _ => return,
    };
    let expected = super::model::expiry(accepted, in_force.consent.lifespan);
    if sent != expected {
        let message = match (expected, in_force.consent.lifespan) {
            (Some(e), Some(days)) => format!(
                "must be {} (acceptanceDate + the consent's lifespan of {days} days)",
                format_time(e)
            ),
            _ => {
                "must be null: the consent has no lifespan, its acceptances never expire".to_owned()
            }
        };
        problems.push("data.expiredDate", ErrorCode::EvidenceMismatch, message);
    }
}

/// Attributes an edit of an acceptance may change (`withdrawalDate` is set
/// by the server; see [`acceptance_update`]).
const EDITABLE: [&str; 3] = ["status", "note", "withdrawalDate"];

/// The next version of an acceptance, from a validated `body` of the update
/// form and the `current` version, adding every problem.
///
/// `status` moves `ACCEPTED` → `WITHDRAWN` only (422 `invalid_transition`
/// backwards); on that move `withdrawalDate` becomes `now` whatever the
/// body says (the spec has the client send one; the server's clock is the
/// evidence, and a withdrawal is never refused for its date). `note` is
/// replaced. Every other attribute is evidence: one in the body must equal
/// the stored value (422 `immutable`; the update form's `application`
/// is compared with `consentApplication`), one left out is kept — the
/// exception to "a PUT nulls what its body leaves out": an edit cannot
/// erase evidence.
pub fn acceptance_update(
    body: &Map<String, Value>,
    current: &Map<String, Value>,
    now: DateTime<Utc>,
    problems: &mut Problems,
) -> Map<String, Value> {
    let mut next = current.clone();
    let status =
        |d: &Map<String, Value>| AcceptanceStatus::parse(get_str(d, "status").unwrap_or_default());
    let (was, becomes) = (status(current), status(body));
    if was == AcceptanceStatus::Withdrawn && becomes == AcceptanceStatus::Accepted {
        problems.push(
            "data.status",
            ErrorCode::InvalidTransition,
            "a WITHDRAWN acceptance stays withdrawn; consent given again is a new acceptance",
        );
    }
    if was != AcceptanceStatus::Withdrawn && becomes == AcceptanceStatus::Withdrawn {
        next.insert("withdrawalDate".to_owned(), format_time(now).into());
    }
    for key in ["status", "note"] {
        next.insert(
            key.to_owned(),
            body.get(key).cloned().unwrap_or(Value::Null),
        );
    }
    for (key, sent) in body {
        if EDITABLE.contains(&key.as_str()) {
            continue;
        }
        let stored = if key == "application" && !current.contains_key("application") {
            current.get("consentApplication")
        } else {
            current.get(key)
        };
        if !same(Some(sent), stored) {
            let shown = stored.map_or_else(|| "not recorded".to_owned(), Value::to_string);
            problems.push(
                format!("data.{key}"),
                ErrorCode::Immutable,
                format!("an acceptance's {key} is evidence and cannot change (it is {shown})"),
            );
        }
    }
    next
}

/// The purposes as a set (their order is presentation, not substance).
fn purpose_set(d: &Map<String, Value>) -> BTreeSet<String> {
    get_strings(d, "purposes")
        .unwrap_or_default()
        .into_iter()
        .collect()
}

fn revision_decreased(
    new: &Map<String, Value>,
    current: &Map<String, Value>,
    problems: &mut Problems,
) -> bool {
    match (get_i64(new, "revision"), get_i64(current, "revision")) {
        // Below 1 is out of range, reported by validation.
        (Some(n), Some(c)) if (1..c).contains(&n) => {
            problems.push(
                "data.revision",
                ErrorCode::RevisionDecreased,
                format!("revision {n} is below the stored revision {c}; revisions only increase"),
            );
            true
        }
        _ => false,
    }
}

/// Checks a replace of a consent: its revision does not decrease, and its
/// purposes (as a set), `application` and `privacyNoticeRef` — what a
/// person agrees to — change only with a greater revision (422
/// `revision_required` on each changed field).
pub fn consent_update(
    new: &Map<String, Value>,
    current: &Map<String, Value>,
    problems: &mut Problems,
) {
    if revision_decreased(new, current, problems) {
        return;
    }
    if get_i64(new, "revision") != get_i64(current, "revision") {
        return;
    }
    let revision = get_i64(current, "revision").unwrap_or_default();
    let changed = [
        ("purposes", purpose_set(new) != purpose_set(current)),
        (
            "application",
            get_str(new, "application") != get_str(current, "application"),
        ),
        (
            "privacyNoticeRef",
            get_str(new, "privacyNoticeRef") != get_str(current, "privacyNoticeRef"),
        ),
    ];
    for (field, differs) in changed {
        if differs {
            problems.push(
                format!("data.{field}"),
                ErrorCode::RevisionRequired,
                format!(
                    "changing a consent's {field} needs a new revision (above {revision}): those who accepted revision {revision} did not agree to it"
                ),
            );
        }
    }
}

/// Checks a replace of a privacy notice: its revision does not decrease.
pub fn notice_update(
    new: &Map<String, Value>,
    current: &Map<String, Value>,
    problems: &mut Problems,
) {
    revision_decreased(new, current, problems);
}

#[cfg(test)]
#[path = "integrity_tests.rs"]
mod tests;
