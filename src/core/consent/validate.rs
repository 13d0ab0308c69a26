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
//! | `out_of_range` | a number outside its range (revision 0, lifespan over 100 years) |
//! | `duplicate` | a purpose code listed twice |
//! | `too_many` | more than [`MAX_PURPOSES`] purposes, more than [`MAX_EXTRA_ATTRIBUTES`] extra attributes |
//! | `too_long` | a text over its limit in [`crate::core::limits`] (`dataSubject` 256 bytes, …) |
//! | `inconsistent` | an `ACCEPTED` acceptance with a `withdrawalDate` |
//!
//! Checks that need the store or the record's history (`unknown_privacy_notice`,
//! `unknown_consent`, `unknown_purpose`, `immutable`, `evidence_mismatch`,
//! the revision rules: see [`super::integrity`]) are added by the service
//! to the same [`Problems`], so one response lists everything.
//!
//! Validation also **normalises**: timestamps become
//! [`format_time`]'s fixed UTC form, whole numbers sent
//! as `2.0` become `2`. Attributes outside the schema are kept unchanged.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::content::{format_time, parse_time, ContentType};
use super::model::{AcceptanceStatus, ConsentStatus, NoticeStatus};
use crate::core::error::Problems;
use crate::core::limits::{
    MAX_APP_LEN, MAX_ATTRIBUTE_NAME_LEN, MAX_CONTENT_ID_LEN, MAX_CONTENT_NAME_LEN,
    MAX_DESCRIPTION_LEN, MAX_DEVICE_FIELD_LEN, MAX_EXTRA_ATTRIBUTES, MAX_EXTRA_ATTRIBUTE_LEN,
    MAX_NOTE_LEN, MAX_PURPOSE_CODE_LEN, MAX_SUBJECT_LEN,
};
use crate::core::wire::json_kind;

pub use crate::core::limits::{MAX_LIFESPAN_DAYS, MAX_PURPOSES, MAX_REVISION};
use request::LANGUAGE_TAG;
pub use request::{accept_consent, is_language_tag, purpose_request, subject_query};

mod request;

/// Longest text accepted where a timestamp is expected: longer text is not
/// a timestamp, and is not echoed back in the message.
const MAX_TIMESTAMP_LEN: usize = 64;

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
    /// Any string of at most this many bytes.
    Text(usize),
    /// A string that is not blank, of at most this many bytes.
    Name(usize),
    /// An array of at most [`MAX_PURPOSES`] distinct non-blank strings, each
    /// of at most this many bytes.
    Names(usize),
    /// A whole number in `min..=max`.
    Integer(i64, i64),
    /// An RFC 3339 timestamp.
    Timestamp,
    /// A timestamp or `""` (not withdrawn).
    TimestampOrEmpty,
    ConsentStatus,
    NoticeStatus,
    AcceptanceStatus,
    /// A BCP 47 language tag ([`is_language_tag`]).
    Language,
    /// Any JSON value (a file reference) of at most
    /// [`MAX_EXTRA_ATTRIBUTE_LEN`] bytes of JSON text.
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

use crate::core::error::ErrorCode;
use Kind::{Integer, Name, Names, Text, Timestamp, TimestampOrEmpty};
use Need::{Optional, Present, Required};

type Attr = (&'static str, Kind, Need);

const REVISION: Kind = Integer(1, MAX_REVISION);
const DEVICE: Kind = Name(MAX_DEVICE_FIELD_LEN);

const NOTICE: &[Attr] = &[
    ("name", Name(MAX_CONTENT_NAME_LEN), Required),
    ("descriptionEn", Text(MAX_DESCRIPTION_LEN), Optional),
    ("descriptionTh", Text(MAX_DESCRIPTION_LEN), Optional),
    ("revision", REVISION, Required),
    ("status", Kind::NoticeStatus, Required),
];

const CONSENT: &[Attr] = &[
    ("name", Name(MAX_CONTENT_NAME_LEN), Required),
    ("descriptionEn", Text(MAX_DESCRIPTION_LEN), Optional),
    ("descriptionTh", Text(MAX_DESCRIPTION_LEN), Optional),
    ("application", Name(MAX_APP_LEN), Required),
    ("purposes", Names(MAX_PURPOSE_CODE_LEN), Required),
    ("lifespan", Integer(0, MAX_LIFESPAN_DAYS), Optional),
    ("formScreen", Kind::Any, Optional),
    ("privacyNoticeRef", Name(MAX_CONTENT_ID_LEN), Required),
    ("revision", REVISION, Required),
    ("status", Kind::ConsentStatus, Required),
    ("ref1", Text(MAX_CONTENT_NAME_LEN), Optional),
    ("ref2", Text(MAX_CONTENT_NAME_LEN), Optional),
    ("ref3", Text(MAX_CONTENT_NAME_LEN), Optional),
];

const ACCEPTANCE_CREATE: &[Attr] = &[
    ("dataSubject", Name(MAX_SUBJECT_LEN), Required),
    ("device", Text(MAX_DEVICE_FIELD_LEN), Optional),
    ("consentId", Name(MAX_CONTENT_ID_LEN), Required),
    ("consentApplication", Name(MAX_APP_LEN), Required),
    ("acceptanceDate", Timestamp, Required),
    ("withdrawalDate", TimestampOrEmpty, Optional),
    ("status", Kind::AcceptanceStatus, Required),
    ("purposes", Names(MAX_PURPOSE_CODE_LEN), Required),
    ("expiredDate", Timestamp, Present),
    ("userAgent", DEVICE, Required),
    ("country", DEVICE, Required),
    ("localIp", DEVICE, Required),
    ("osVersion", DEVICE, Required),
    ("model", DEVICE, Required),
    ("deviceFingerprintId", DEVICE, Required),
    ("note", Text(MAX_NOTE_LEN), Required),
    // Evidence the server sets (see `integrity`); typed when sent.
    ("consentRevision", REVISION, Optional),
    ("privacyNoticeId", Name(MAX_CONTENT_ID_LEN), Optional),
    ("privacyNoticeRevision", REVISION, Optional),
    ("receivedDate", Timestamp, Optional),
    ("language", Kind::Language, Optional),
    ("formScreen", Text(MAX_CONTENT_ID_LEN), Optional),
];

const ACCEPTANCE_UPDATE: &[Attr] = &[
    ("dataSubject", Name(MAX_SUBJECT_LEN), Required),
    ("device", Text(MAX_DEVICE_FIELD_LEN), Optional),
    ("consentId", Name(MAX_CONTENT_ID_LEN), Required),
    ("application", Name(MAX_APP_LEN), Required),
    ("acceptanceDate", Timestamp, Required),
    ("withdrawalDate", TimestampOrEmpty, Optional),
    ("status", Kind::AcceptanceStatus, Required),
    ("note", Text(MAX_NOTE_LEN), Required),
    // Not part of the update form, but typed when sent (an edit may
    // repeat them; it cannot change them).
    ("consentApplication", Name(MAX_APP_LEN), Optional),
    ("purposes", Names(MAX_PURPOSE_CODE_LEN), Optional),
    ("expiredDate", Timestamp, Optional),
    ("userAgent", Text(MAX_DEVICE_FIELD_LEN), Optional),
    ("country", Text(MAX_DEVICE_FIELD_LEN), Optional),
    ("localIp", Text(MAX_DEVICE_FIELD_LEN), Optional),
    ("osVersion", Text(MAX_DEVICE_FIELD_LEN), Optional),
    ("model", Text(MAX_DEVICE_FIELD_LEN), Optional),
    ("deviceFingerprintId", Text(MAX_DEVICE_FIELD_LEN), Optional),
    ("consentRevision", REVISION, Optional),
    ("privacyNoticeId", Name(MAX_CONTENT_ID_LEN), Optional),
    ("privacyNoticeRevision", REVISION, Optional),
    ("receivedDate", Timestamp, Optional),
    ("language", Kind::Language, Optional),
    ("formScreen", Text(MAX_CONTENT_ID_LEN), Optional),
];

const PURPOSE: &[Attr] = &[
    ("code", Name(MAX_PURPOSE_CODE_LEN), Required),
    ("nameEn", Text(MAX_CONTENT_NAME_LEN), Optional),
    ("nameTh", Text(MAX_CONTENT_NAME_LEN), Optional),
];

/// Attributes a SQL store indexes by their text (`data ->> 'name'`) in
/// every content type, with the longest text allowed. A type that does not
/// define one may still carry it as an extra attribute; it gets the same
/// bound, so no record overflows an index row.
const INDEXED: &[(&str, usize)] = &[
    ("application", MAX_APP_LEN),
    ("dataSubject", MAX_SUBJECT_LEN),
    ("code", MAX_PURPOSE_CODE_LEN),
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

/// Whether `attribute` is one of the attributes of type `t` in either form
/// (everything else in `data` is an extra attribute, kept as sent).
pub fn is_schema_attribute(t: ContentType, attribute: &str) -> bool {
    [Form::Create, Form::Update]
        .into_iter()
        .any(|f| schema(t, f).iter().any(|(name, _, _)| *name == attribute))
}

/// Validates and normalises the `data` of a content write. Returns the
/// normalised attributes and every problem found (empty when valid).
pub fn content_data(t: ContentType, form: Form, data: &Value) -> (Map<String, Value>, Problems) {
    let mut problems = Problems::new();
    crate::core::wire::find_nul(data, "data", &mut problems);
    let mut out = match data {
        Value::Object(m) => {
            let mut m = m.clone();
            m.values_mut().for_each(crate::core::wire::double_numbers);
            m
        }
        Value::Null => {
            problems.push("data", ErrorCode::Required, "data is required");
            return (Map::new(), problems);
        }
        other => {
            problems.push(
                "data",
                ErrorCode::InvalidType,
                format!("data must be an object, found {}", json_kind(other)),
            );
            return (Map::new(), problems);
        }
    };
    let attrs = schema(t, form);
    for &(name, kind, need) in attrs {
        let path = format!("data.{name}");
        match out.get(name) {
            None if need != Optional => problems.push(path, ErrorCode::Required, "is required"),
            Some(Value::Null) if need == Required => {
                problems.push(path, ErrorCode::Required, "is required");
            }
            None | Some(Value::Null) => {}
            Some(v) => {
                if let Some(normal) = check(&path, kind, v, &mut problems) {
                    out.insert(name.to_owned(), normal);
                }
            }
        }
    }
    check_extras(t, &out, &mut problems);
    cross_checks(t, &out, &mut problems);
    (out, problems)
}

/// The bounds of attributes outside the type's own: how many, how long
/// their names and values are, and the index bound of [`INDEXED`] names.
fn check_extras(t: ContentType, data: &Map<String, Value>, problems: &mut Problems) {
    let mut extras = 0;
    for (name, value) in data {
        if is_schema_attribute(t, name) {
            continue;
        }
        extras += 1;
        if name.len() > MAX_ATTRIBUTE_NAME_LEN {
            problems.push(
                "data",
                ErrorCode::TooLong,
                format!("attribute names are at most {MAX_ATTRIBUTE_NAME_LEN} bytes"),
            );
            continue;
        }
        let path = format!("data.{name}");
        let text_len = match value {
            Value::String(s) => s.len(),
            other => other.to_string().len(),
        };
        let json_len = value.to_string().len();
        if let Some((_, max)) = INDEXED.iter().find(|(n, _)| n == name) {
            if text_len > *max {
                problems.push(
                    path,
                    ErrorCode::TooLong,
                    format!("must be at most {max} bytes"),
                );
                continue;
            }
        }
        if json_len > MAX_EXTRA_ATTRIBUTE_LEN {
            problems.push(
                path,
                ErrorCode::TooLong,
                format!("must be at most {MAX_EXTRA_ATTRIBUTE_LEN} bytes of JSON"),
            );
        }
    }
    if extras > MAX_EXTRA_ATTRIBUTES {
        problems.push(
            "data",
            ErrorCode::TooMany,
            format!(
                "at most {MAX_EXTRA_ATTRIBUTES} attributes beyond those of {t} are allowed, found {extras}"
            ),
        );
    }
}

fn too_long(path: &str, s: &str, max: usize, problems: &mut Problems) -> bool {
    if s.len() > max {
        problems.push(
            path,
            ErrorCode::TooLong,
            format!("must be at most {max} bytes, found {}", s.len()),
        );
        return true;
    }
    false
}

/// Checks one value; returns its normalised form when it differs.
fn check(path: &str, kind: Kind, v: &Value, problems: &mut Problems) -> Option<Value> {
    let want = match (kind, v) {
        (Text(max), Value::String(s)) => {
            too_long(path, s, max, problems);
            return None;
        }
        (Kind::Language, Value::String(s)) => {
            if !is_language_tag(s) {
                problems.push(path, ErrorCode::Invalid, LANGUAGE_TAG);
            }
            return None;
        }
        (Kind::Any, _) => {
            let len = v.to_string().len();
            if len > MAX_EXTRA_ATTRIBUTE_LEN {
                problems.push(
                    path,
                    ErrorCode::TooLong,
                    format!("must be at most {MAX_EXTRA_ATTRIBUTE_LEN} bytes of JSON"),
                );
            }
            return None;
        }
        (Name(max), Value::String(s)) => {
            if !too_long(path, s, max, problems) && s.trim().is_empty() {
                problems.push(path, ErrorCode::Required, "must not be empty");
            }
            return None;
        }
        (Names(max), Value::Array(items)) => {
            check_names(path, items, max, problems);
            return None;
        }
        (Integer(min, max), Value::Number(n)) => return check_integer(path, n, min, max, problems),
        (TimestampOrEmpty, Value::String(s)) if s.is_empty() => return None,
        (Timestamp | TimestampOrEmpty, Value::String(s)) => {
            return check_timestamp(path, s, problems)
        }
        (Kind::ConsentStatus | Kind::NoticeStatus | Kind::AcceptanceStatus, Value::String(s)) => {
            check_status(path, kind, s, problems);
            return None;
        }
        (Names(_), _) => "an array of strings",
        (Integer(..), _) => "a whole number",
        (Timestamp | TimestampOrEmpty, _) => "an RFC 3339 timestamp string",
        _ => "a string",
    };
    problems.push(
        path,
        ErrorCode::InvalidType,
        format!("must be {want}, found {}", json_kind(v)),
    );
    None
}

fn check_names(path: &str, items: &[Value], max: usize, problems: &mut Problems) {
    for (i, item) in items.iter().enumerate() {
        let at = format!("{path}[{i}]");
        match item {
            Value::String(s) => {
                if !too_long(&at, s, max, problems) && s.trim().is_empty() {
                    problems.push(at, ErrorCode::Required, "must not be empty");
                }
            }
            other => problems.push(
                at,
                ErrorCode::InvalidType,
                format!("must be a string, found {}", json_kind(other)),
            ),
        }
    }
    check_codes(path, items.iter().filter_map(Value::as_str), problems);
}

fn check_integer(
    path: &str,
    n: &serde_json::Number,
    min: i64,
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
            problems.push(path, ErrorCode::InvalidType, "must be a whole number");
            None
        }
        Some(i) if !(min..=max).contains(&i) => {
            problems.push(
                path,
                ErrorCode::OutOfRange,
                format!("must be between {min} and {max}, got {i}"),
            );
            None
        }
        Some(i) => n.as_i64().is_none().then(|| Value::from(i)),
    }
}

fn check_timestamp(path: &str, s: &str, problems: &mut Problems) -> Option<Value> {
    let parsed = (s.len() <= MAX_TIMESTAMP_LEN)
        .then(|| parse_time(s))
        .flatten();
    if parsed.is_none() {
        let shown = if s.len() <= MAX_TIMESTAMP_LEN {
            format!("{s:?}")
        } else {
            format!("a text of {} bytes", s.len())
        };
        problems.push(
            path,
            ErrorCode::InvalidTimestamp,
            format!("{shown} is not an RFC 3339 timestamp such as 2026-01-01T00:00:00+07:00"),
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
    } else if s.len() > MAX_TIMESTAMP_LEN {
        format!("a text of {} bytes is not one of {expected}", s.len())
    } else {
        format!("{s:?} is not one of {expected}")
    };
    problems.push(path, ErrorCode::InvalidEnum, message);
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
                ErrorCode::Duplicate,
                format!("{code:?} is listed more than once"),
            );
        }
    }
    if n > MAX_PURPOSES {
        problems.push(
            path,
            ErrorCode::TooMany,
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
                    ErrorCode::Required,
                    "a consent must list at least one purpose",
                );
            }
        }
        ContentType::ConsentAcceptance => {
            let text = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or_default();
            let status = AcceptanceStatus::parse(text("status"));
            if status == AcceptanceStatus::Accepted && !text("withdrawalDate").is_empty() {
                problems.push(
                    "data.withdrawalDate",
                    ErrorCode::Inconsistent,
                    "an ACCEPTED acceptance has no withdrawalDate; send \"\" or leave it out",
                );
            }
        }
        ContentType::PrivacyNotice | ContentType::Purpose => {}
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
