//! Validation of content `data` and of application-facing requests.
//!
//! Every problem is collected (see [`Problems`]) with the JSON path of its
//! field — `data.<attr>` for content, the body field name for requests —
//! and a stable code:
//!
//! | code | meaning |
//! |---|---|
//! | `required` | missing, `null`, blank, or (purposes of a consent) empty |
//! | `invalid_type` | wrong JSON type (`"revision": "2"`, a number in `purposes`) |
//! | `invalid_enum` | a status outside its set; `ACCEPTED`/`WITHDRAWN` on a consent says they belong to acceptances |
//! | `invalid_timestamp` | not RFC 3339 (`2026-01-01T00:00:00+07:00`) |
//! | `out_of_range` | a number outside its range (negative revision, lifespan over 100 years) |
//! | `duplicate` | a purpose code listed twice |
//! | `too_many` | more than [`MAX_PURPOSES`] purposes |
//! | `invalid_value` | `expiredDate` before `acceptanceDate` |
//! | `inconsistent` | an `ACCEPTED` acceptance with a `withdrawalDate` |
//!
//! Checks that need the store (`unknown_privacy_notice`, `unknown_consent`,
//! `unknown_purpose`, `immutable`) are added by the service to the same
//! [`Problems`], so one response lists everything.
//!
//! Validation also **normalises**: timestamps become
//! [`format_time`]'s fixed UTC form, whole numbers sent
//! as `2.0` become `2`. Attributes outside the schema are kept unchanged.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::content::{format_time, parse_time, ContentType};
use super::model::{
    AcceptConsentRequest, AcceptanceStatus, ConsentStatus, NoticeStatus, PurposeRequest,
};
use crate::error::Problems;
use crate::wire::json_kind;

/// Longest lifespan, in days (100 years).
pub const MAX_LIFESPAN_DAYS: i64 = 36_500;
/// Largest revision number.
pub const MAX_REVISION: i64 = 1_000_000_000;
/// Most purposes one consent or acceptance may list.
pub const MAX_PURPOSES: usize = 200;

/// Which form of a content type's `data` is being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `POST`: the create form.
    Create,
    /// `PUT`: the update form (for acceptances, `application` instead of
    /// `consentApplication`, and no device context).
    Update,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Any string.
    Text,
    /// A string that is not blank.
    Name,
    /// An array of non-blank strings.
    Names,
    /// A whole number in `0..=max`.
    Integer(i64),
    /// An RFC 3339 timestamp.
    Timestamp,
    /// A timestamp or `""` (not withdrawn).
    TimestampOrEmpty,
    ConsentStatus,
    NoticeStatus,
    AcceptanceStatus,
    /// Anything (a file reference).
    Any,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Present and not null.
    Required,
    /// Present; `null` allowed (`expiredDate`: never expires).
    Present,
    /// May be missing or null.
    Optional,
}

use Kind::{Integer, Name, Names, Text, Timestamp, TimestampOrEmpty};
use Need::{Optional, Present, Required};

type Attr = (&'static str, Kind, Need);

const NOTICE: &[Attr] = &[
    ("name", Name, Required),
    ("descriptionEn", Text, Optional),
    ("descriptionTh", Text, Optional),
    ("revision", Integer(MAX_REVISION), Required),
    ("status", Kind::NoticeStatus, Required),
];

const CONSENT: &[Attr] = &[
    ("name", Name, Required),
    ("descriptionEn", Text, Optional),
    ("descriptionTh", Text, Optional),
    ("application", Name, Required),
    ("purposes", Names, Required),
    ("lifespan", Integer(MAX_LIFESPAN_DAYS), Optional),
    ("formScreen", Kind::Any, Optional),
    ("privacyNoticeRef", Name, Required),
    ("revision", Integer(MAX_REVISION), Required),
    ("status", Kind::ConsentStatus, Required),
    ("ref1", Text, Optional),
    ("ref2", Text, Optional),
    ("ref3", Text, Optional),
];

const ACCEPTANCE_CREATE: &[Attr] = &[
    ("dataSubject", Name, Required),
    ("device", Text, Optional),
    ("consentId", Name, Required),
    ("consentApplication", Name, Required),
    ("acceptanceDate", Timestamp, Required),
    ("withdrawalDate", TimestampOrEmpty, Optional),
    ("status", Kind::AcceptanceStatus, Required),
    ("purposes", Names, Required),
    ("expiredDate", Timestamp, Present),
    ("userAgent", Name, Required),
    ("country", Name, Required),
    ("localIp", Name, Required),
    ("osVersion", Name, Required),
    ("model", Name, Required),
    ("deviceFingerprintId", Name, Required),
    ("note", Text, Required),
    ("consentRevision", Integer(MAX_REVISION), Optional),
    ("privacyNoticeId", Name, Optional),
    ("privacyNoticeRevision", Integer(MAX_REVISION), Optional),
];

const ACCEPTANCE_UPDATE: &[Attr] = &[
    ("dataSubject", Name, Required),
    ("device", Text, Optional),
    ("consentId", Name, Required),
    ("application", Name, Required),
    ("acceptanceDate", Timestamp, Required),
    ("withdrawalDate", TimestampOrEmpty, Optional),
    ("status", Kind::AcceptanceStatus, Required),
    ("note", Text, Required),
    // Not part of the update form, but typed when sent.
    ("consentApplication", Name, Optional),
    ("purposes", Names, Optional),
    ("expiredDate", Timestamp, Optional),
    ("userAgent", Text, Optional),
    ("country", Text, Optional),
    ("localIp", Text, Optional),
    ("osVersion", Text, Optional),
    ("model", Text, Optional),
    ("deviceFingerprintId", Text, Optional),
    ("consentRevision", Integer(MAX_REVISION), Optional),
    ("privacyNoticeId", Name, Optional),
    ("privacyNoticeRevision", Integer(MAX_REVISION), Optional),
];

const PURPOSE: &[Attr] = &[
    ("code", Name, Required),
    ("nameEn", Text, Optional),
    ("nameTh", Text, Optional),
];

fn schema(t: ContentType, form: Form) -> &'static [Attr] {
    match (t, form) {
        (ContentType::PrivacyNotice, _) => NOTICE,
        (ContentType::Consent, _) => CONSENT,
        (ContentType::ConsentAcceptance, Form::Create) => ACCEPTANCE_CREATE,
        (ContentType::ConsentAcceptance, Form::Update) => ACCEPTANCE_UPDATE,
        (ContentType::Purpose, _) => PURPOSE,
    }
}

/// Validates and normalises the `data` of a content write. Returns the
/// normalised attributes and every problem found (empty when valid).
pub fn content_data(t: ContentType, form: Form, data: &Value) -> (Map<String, Value>, Problems) {
    let mut problems = Problems::new();
    crate::wire::find_nul(data, "data", &mut problems);
    let mut out = match data {
        Value::Object(m) => m.clone(),
        Value::Null => {
            problems.push("data", "required", "data is required");
            return (Map::new(), problems);
        }
        other => {
            problems.push(
                "data",
                "invalid_type",
                format!("data must be an object, found {}", json_kind(other)),
            );
            return (Map::new(), problems);
        }
    };
    for &(name, kind, need) in schema(t, form) {
        let path = format!("data.{name}");
        match out.get(name) {
            None if need != Optional => problems.push(path, "required", "is required"),
            Some(Value::Null) if need == Required => {
                problems.push(path, "required", "is required");
            }
            None | Some(Value::Null) => {}
            Some(v) => {
                if let Some(normal) = check(&path, kind, v, &mut problems) {
                    out.insert(name.to_owned(), normal);
                }
            }
        }
    }
    cross_checks(t, &out, &mut problems);
    (out, problems)
}

/// Checks one value; returns its normalised form when it differs.
fn check(path: &str, kind: Kind, v: &Value, problems: &mut Problems) -> Option<Value> {
    let want = match (kind, v) {
        (Kind::Any | Text, Value::String(_)) | (Kind::Any, _) => return None,
        (Name, Value::String(s)) => {
            if s.trim().is_empty() {
                problems.push(path, "required", "must not be empty");
            }
            return None;
        }
        (Names, Value::Array(items)) => {
            check_names(path, items, problems);
            return None;
        }
        (Integer(max), Value::Number(n)) => return check_integer(path, n, max, problems),
        (TimestampOrEmpty, Value::String(s)) if s.is_empty() => return None,
        (Timestamp | TimestampOrEmpty, Value::String(s)) => {
            return check_timestamp(path, s, problems)
        }
        (Kind::ConsentStatus | Kind::NoticeStatus | Kind::AcceptanceStatus, Value::String(s)) => {
            check_status(path, kind, s, problems);
            return None;
        }
        (Names, _) => "an array of strings",
        (Integer(_), _) => "a whole number",
        (Timestamp | TimestampOrEmpty, _) => "an RFC 3339 timestamp string",
        _ => "a string",
    };
    problems.push(
        path,
        "invalid_type",
        format!("must be {want}, found {}", json_kind(v)),
    );
    None
}

fn check_names(path: &str, items: &[Value], problems: &mut Problems) {
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::String(s) if !s.trim().is_empty() => {}
            Value::String(_) => {
                problems.push(format!("{path}[{i}]"), "required", "must not be empty");
            }
            other => problems.push(
                format!("{path}[{i}]"),
                "invalid_type",
                format!("must be a string, found {}", json_kind(other)),
            ),
        }
    }
    check_codes(path, items.iter().filter_map(Value::as_str), problems);
}

fn check_integer(
    path: &str,
    n: &serde_json::Number,
    max: i64,
    problems: &mut Problems,
) -> Option<Value> {
    let whole = n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| {
                // The guard above makes the cast exact.
                #[allow(clippy::cast_possible_truncation)]
                let i = f as i64;
                i
            })
    });
    match whole {
        None => {
            problems.push(path, "invalid_type", "must be a whole number");
            None
        }
        Some(i) if !(0..=max).contains(&i) => {
            problems.push(
                path,
                "out_of_range",
                format!("must be between 0 and {max}, got {i}"),
            );
            None
        }
        Some(i) => n.as_i64().is_none().then(|| Value::from(i)),
    }
}

fn check_timestamp(path: &str, s: &str, problems: &mut Problems) -> Option<Value> {
    let parsed = parse_time(s);
    if parsed.is_none() {
        problems.push(
            path,
            "invalid_timestamp",
            format!("{s:?} is not an RFC 3339 timestamp such as 2026-01-01T00:00:00+07:00"),
        );
    }
    parsed.map(|t| Value::String(format_time(t)))
}

fn check_status(path: &str, kind: Kind, s: &str, problems: &mut Problems) {
    let (known, expected) = match kind {
        Kind::ConsentStatus => (
            ConsentStatus::parse(s).is_known(),
            ConsentStatus::expected(),
        ),
        Kind::NoticeStatus => (NoticeStatus::parse(s).is_known(), NoticeStatus::expected()),
        _ => (
            AcceptanceStatus::parse(s).is_known(),
            AcceptanceStatus::expected(),
        ),
    };
    if known {
        return;
    }
    let message = if kind == Kind::ConsentStatus && AcceptanceStatus::parse(s).is_known() {
        format!(
            "{s} is a status of consent acceptances, not of consents; a consent's status is one of {expected}"
        )
    } else {
        format!("{s:?} is not one of {expected}")
    };
    problems.push(path, "invalid_enum", message);
}

/// Duplicate and count checks of a list of purpose codes.
fn check_codes<'a>(path: &str, codes: impl Iterator<Item = &'a str>, problems: &mut Problems) {
    let mut seen = HashSet::new();
    let mut n = 0;
    for code in codes {
        n += 1;
        if !code.trim().is_empty() && !seen.insert(code) {
            problems.push(
                path,
                "duplicate",
                format!("{code:?} is listed more than once"),
            );
        }
    }
    if n > MAX_PURPOSES {
        problems.push(
            path,
            "too_many",
            format!("at most {MAX_PURPOSES} purposes are allowed"),
        );
    }
}

fn cross_checks(t: ContentType, d: &Map<String, Value>, problems: &mut Problems) {
    match t {
        ContentType::Consent => {
            if d.get("purposes")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty)
            {
                problems.push(
                    "data.purposes",
                    "required",
                    "a consent must list at least one purpose",
                );
            }
        }
        ContentType::ConsentAcceptance => {
            let text = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or_default();
            let status = AcceptanceStatus::parse(text("status"));
            let withdrawal = text("withdrawalDate");
            if status == AcceptanceStatus::Withdrawn && withdrawal.is_empty() {
                problems.push(
                    "data.withdrawalDate",
                    "required",
                    "a WITHDRAWN acceptance needs its withdrawalDate",
                );
            }
            if status == AcceptanceStatus::Accepted && !withdrawal.is_empty() {
                problems.push(
                    "data.withdrawalDate",
                    "inconsistent",
                    "an ACCEPTED acceptance has no withdrawalDate; send \"\" or leave it out",
                );
            }
            if let (Some(a), Some(e)) = (
                parse_time(text("acceptanceDate")),
                parse_time(text("expiredDate")),
            ) {
                if e < a {
                    problems.push(
                        "data.expiredDate",
                        "invalid_value",
                        "expiredDate is before acceptanceDate",
                    );
                }
            }
        }
        ContentType::PrivacyNotice | ContentType::Purpose => {}
    }
}

fn require(problems: &mut Problems, field: &str, v: Option<&String>) {
    if v.is_none_or(|s| s.trim().is_empty()) {
        problems.push(field, "required", "is required");
    }
}

/// Checks an "accept consent" body: every required field, and the shape of
/// `purposes` (whether they belong to the consent is checked by the service).
pub fn accept_consent(req: &AcceptConsentRequest) -> Problems {
    let mut p = Problems::new();
    if let Ok(json) = serde_json::to_value(req) {
        crate::wire::find_nul(&json, "", &mut p);
    }
    for (field, v) in [
        ("app", &req.app),
        ("dataSubject", &req.data_subject),
        ("consentId", &req.consent_id),
        ("userAgent", &req.user_agent),
        ("country", &req.country),
        ("localIp", &req.local_ip),
        ("osVersion", &req.os_version),
        ("model", &req.model),
        ("deviceFingerprintId", &req.device_fingerprint_id),
    ] {
        require(&mut p, field, v.as_ref());
    }
    if let Some(purposes) = &req.purposes {
        for (i, code) in purposes.iter().enumerate() {
            if code.trim().is_empty() {
                p.push(format!("purposes[{i}]"), "required", "must not be empty");
            }
        }
        check_codes("purposes", purposes.iter().map(String::as_str), &mut p);
    }
    p
}

/// Checks an "accept/withdraw purpose" body.
pub fn purpose_request(req: &PurposeRequest) -> Problems {
    let mut p = Problems::new();
    if let Ok(json) = serde_json::to_value(req) {
        crate::wire::find_nul(&json, "", &mut p);
    }
    require(&mut p, "app", req.app.as_ref());
    require(&mut p, "dataSubject", req.data_subject.as_ref());
    require(&mut p, "purposeCode", req.purpose_code.as_ref());
    p
}

/// Checks the `app` and `dataSubject` of a to-accept or purpose-options
/// query.
pub fn subject_query(app: &str, data_subject: &str) -> Problems {
    let mut p = Problems::new();
    if app.trim().is_empty() {
        p.push("app", "required", "is required");
    }
    if data_subject.trim().is_empty() {
        p.push("dataSubject", "required", "is required");
    }
    p
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
