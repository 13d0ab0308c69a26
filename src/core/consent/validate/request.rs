//! Validation of the application-facing requests: accept a consent,
//! accept or withdraw a purpose, and the subject of a query (the codes are
//! those of the module above).

use super::{check_codes, too_long};
use crate::core::consent::model::{AcceptConsentRequest, PurposeRequest};
use crate::core::error::{ErrorCode, Problems};
use crate::core::limits::{
    MAX_APP_LEN, MAX_CONTENT_ID_LEN, MAX_DEVICE_FIELD_LEN, MAX_LANGUAGE_TAG_LEN, MAX_NOTE_LEN,
    MAX_PURPOSE_CODE_LEN, MAX_SUBJECT_LEN,
};

/// A required request field: present, not blank, at most `max` bytes.
fn require(problems: &mut Problems, field: &str, v: Option<&str>, max: usize) {
    match v {
        Some(s) if s.len() > max => {
            too_long(field, s, max, problems);
        }
        Some(s) if !s.trim().is_empty() => {}
        _ => problems.push(field, ErrorCode::Required, "is required"),
    }
}

/// Checks an "accept consent" body: every required field, the lengths,
/// and the shape of `purposes` (whether they belong to the consent is
/// checked by the service).
pub fn accept_consent(req: &AcceptConsentRequest) -> Problems {
    let mut p = Problems::new();
    if let Ok(json) = serde_json::to_value(req) {
        crate::core::wire::find_nul(&json, "", &mut p);
    }
    for (field, v, max) in [
        ("app", &req.app, MAX_APP_LEN),
        ("dataSubject", &req.data_subject, MAX_SUBJECT_LEN),
        ("consentId", &req.consent_id, MAX_CONTENT_ID_LEN),
        ("userAgent", &req.user_agent, MAX_DEVICE_FIELD_LEN),
        ("country", &req.country, MAX_DEVICE_FIELD_LEN),
        ("localIp", &req.local_ip, MAX_DEVICE_FIELD_LEN),
        ("osVersion", &req.os_version, MAX_DEVICE_FIELD_LEN),
        ("model", &req.model, MAX_DEVICE_FIELD_LEN),
        (
            "deviceFingerprintId",
            &req.device_fingerprint_id,
            MAX_DEVICE_FIELD_LEN,
        ),
    ] {
        require(&mut p, field, v.as_deref(), max);
    }
    if let Some(note) = &req.note {
        too_long("note", note, MAX_NOTE_LEN, &mut p);
    }
    if let Some(screen) = &req.form_screen {
        too_long("formScreen", screen, MAX_CONTENT_ID_LEN, &mut p);
    }
    if let Some(language) = &req.language {
        if !is_language_tag(language) {
            p.push("language", ErrorCode::Invalid, LANGUAGE_TAG);
        }
    }
    if let Some(purposes) = &req.purposes {
        for (i, code) in purposes.iter().enumerate() {
            let at = format!("purposes[{i}]");
            if !too_long(&at, code, MAX_PURPOSE_CODE_LEN, &mut p) && code.trim().is_empty() {
                p.push(at, ErrorCode::Required, "must not be empty");
            }
        }
        check_codes("purposes", purposes.iter().map(String::as_str), &mut p);
    }
    p
}

/// What a language tag looks like, for error messages.
pub(super) const LANGUAGE_TAG: &str =
    "must be a BCP 47 language tag such as en, th or th-TH (letters, digits and hyphens, at most 35 bytes)";

/// Whether `s` has the shape of a BCP 47 language tag: a primary subtag of
/// 2 to 8 letters, then subtags of 1 to 8 letters or digits, separated by
/// hyphens, at most [`MAX_LANGUAGE_TAG_LEN`] bytes.
pub fn is_language_tag(s: &str) -> bool {
    let mut parts = s.split('-');
    let primary = parts.next().unwrap_or_default();
    s.len() <= MAX_LANGUAGE_TAG_LEN
        && (2..=8).contains(&primary.len())
        && primary.bytes().all(|b| b.is_ascii_alphabetic())
        && parts.all(|p| (1..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Checks an "accept/withdraw purpose" body.
pub fn purpose_request(req: &PurposeRequest) -> Problems {
    let mut p = Problems::new();
    if let Ok(json) = serde_json::to_value(req) {
        crate::core::wire::find_nul(&json, "", &mut p);
    }
    require(&mut p, "app", req.app.as_deref(), MAX_APP_LEN);
    require(
        &mut p,
        "dataSubject",
        req.data_subject.as_deref(),
        MAX_SUBJECT_LEN,
    );
    require(
        &mut p,
        "purposeCode",
        req.purpose_code.as_deref(),
        MAX_PURPOSE_CODE_LEN,
    );
    p
}

/// Checks the `app` and `dataSubject` of a to-accept or purpose-options
/// query (no record can hold longer ones).
pub fn subject_query(app: &str, data_subject: &str) -> Problems {
    let mut p = Problems::new();
    require(&mut p, "app", Some(app), MAX_APP_LEN);
    require(&mut p, "dataSubject", Some(data_subject), MAX_SUBJECT_LEN);
    p
}
