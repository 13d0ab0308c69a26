//! The integrity check of stored records: which versions break the consent
//! rules ([`super::validate`], [`super::integrity`]) — written before a rule
//! existed, by an older version of this crate, or straight into a database.
//! It reports; it never rewrites a record (consent history is evidence, and
//! correcting it is a decision for a person, recorded as a new version).
//!
//! Each version is judged by the rules as they apply to the write that made
//! it, against what was stored then (the store's `seq` order): version 1 of
//! an acceptance against the consent and notice versions recorded before
//! it, at the time it was recorded; version n against version n − 1.
//! [`ConsentService::check_records`](crate::service::consent::ConsentService::check_records)
//! runs it over a project.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::content::{ContentRecord, ContentType};
use super::erasure::{is_pseudonym, ERASED_FIELDS};
use super::integrity::{self, InForce};
use super::model::{Consent, PrivacyNotice};
use super::validate::{self, Form};
use crate::core::error::ErrorCode;
use crate::core::error::{FieldError, Problems};

/// One rule a stored version breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// The record's type.
    pub content_type: ContentType,
    /// The record's id.
    pub id: String,
    /// The version that breaks the rule.
    pub version: i64,
    /// The attribute (`data.consentRevision`), as a write would be told.
    pub field: String,
    /// The code a write breaking the rule gets today (`immutable`,
    /// `evidence_mismatch`, `revision_decreased`, …), or
    /// `evidence_missing` for evidence the record lacks.
    pub code: String,
    /// What is wrong.
    pub message: String,
}

/// Every version of every record of one project, per type: each inner
/// vector is one record's versions, oldest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histories {
    /// Privacy notices.
    pub notices: Vec<Vec<ContentRecord>>,
    /// Consents.
    pub consents: Vec<Vec<ContentRecord>>,
    /// Consent acceptances.
    pub acceptances: Vec<Vec<ContentRecord>>,
}

fn report(out: &mut Vec<Finding>, record: &ContentRecord, problems: Problems) {
    out.extend(
        problems
            .into_fields()
            .into_iter()
            .map(|f: FieldError| Finding {
                content_type: record.content_type,
                id: record.id.clone(),
                version: record.version,
                field: f.field,
                code: f.code.as_str().to_owned(),
                message: f.message,
            }),
    );
}

/// `problems` of an acceptance version less those of the attributes
/// erasure emptied, when `data` was erased (its subject a pseudonym): the
/// law, not a client, emptied them, and what they said is gone
/// ([`super::erasure`]). Any other problem stays.
fn not_erased(data: &serde_json::Map<String, Value>, problems: Problems) -> Problems {
    let erased = data
        .get("dataSubject")
        .and_then(Value::as_str)
        .is_some_and(is_pseudonym);
    if !erased {
        return problems;
    }
    let emptied = |field: &str| {
        ERASED_FIELDS.iter().any(|k| {
            field.strip_prefix("data.") == Some(*k)
                && data.get(*k).and_then(Value::as_str) == Some("")
        })
    };
    let mut kept = Problems::new();
    for f in problems.into_fields() {
        if !emptied(&f.field) {
            kept.push(f.field, f.code, f.message);
        }
    }
    kept
}

/// The versions of a history recorded before `seq`.
fn before(history: &[ContentRecord], seq: i64) -> &[ContentRecord] {
    let n = history.iter().take_while(|v| v.seq < seq).count();
    &history[..n]
}

/// Every finding over the histories, by type (notices, consents,
/// acceptances), record and version.
pub fn check(histories: &Histories) -> Vec<Finding> {
    let mut out = Vec::new();
    let notices: HashMap<&str, &[ContentRecord]> = histories
        .notices
        .iter()
        .filter_map(|h| Some((h.first()?.id.as_str(), h.as_slice())))
        .collect();
    let consents: HashMap<&str, &[ContentRecord]> = histories
        .consents
        .iter()
        .filter_map(|h| Some((h.first()?.id.as_str(), h.as_slice())))
        .collect();
    for history in &histories.notices {
        check_revisioned(&mut out, history, |new, old, p| {
            integrity::notice_update(new, old, p);
        });
    }
    for history in &histories.consents {
        check_revisioned(&mut out, history, |new, old, p| {
            integrity::consent_update(new, old, p);
        });
        for v in history {
            let notice = Consent::from_record(v).privacy_notice_ref;
            let existed = notices
                .get(notice.as_str())
                .is_some_and(|h| !before(h, v.seq).is_empty());
            if !existed {
                let mut p = Problems::new();
                p.push(
                    "data.privacyNoticeRef",
                    ErrorCode::UnknownPrivacyNotice,
                    format!("there was no privacy notice {notice:?} in this project"),
                );
                report(&mut out, v, p);
            }
        }
    }
    for history in &histories.acceptances {
        check_acceptance(&mut out, history, &consents, &notices);
    }
    out
}

/// A notice's or consent's versions: each valid, and each replace allowed
/// by `update` (new, previous).
fn check_revisioned(
    out: &mut Vec<Finding>,
    history: &[ContentRecord],
    update: impl Fn(&serde_json::Map<String, Value>, &serde_json::Map<String, Value>, &mut Problems),
) {
    let mut previous: Option<&ContentRecord> = None;
    for v in history {
        let form = if previous.is_some() {
            Form::Update
        } else {
            Form::Create
        };
        let (_, mut problems) =
            validate::content_data(v.content_type, form, &Value::Object(v.data.clone()));
        if let Some(prev) = previous {
            update(&v.data, &prev.data, &mut problems);
        }
        report(out, v, problems);
        previous = Some(v);
    }
}

fn check_acceptance(
    out: &mut Vec<Finding>,
    history: &[ContentRecord],
    consents: &HashMap<&str, &[ContentRecord]>,
    notices: &HashMap<&str, &[ContentRecord]>,
) {
    let Some(first) = history.first() else {
        return;
    };
    let (mut data, mut problems) = validate::content_data(
        ContentType::ConsentAcceptance,
        Form::Create,
        &Value::Object(first.data.clone()),
    );
    let consent_id = first.str("consentId").unwrap_or_default();
    let consent_then = consents
        .get(consent_id)
        .map(|h| before(h, first.seq))
        .unwrap_or_default();
    let notice_then = consent_then.last().and_then(|c| {
        let id = Consent::from_record(c).privacy_notice_ref;
        let versions = before(notices.get(id.as_str())?, first.seq);
        versions.last().map(PrivacyNotice::from_record)
    });
    match InForce::from_versions(consent_then, notice_then) {
        None => problems.push(
            "data.consentId",
            ErrorCode::UnknownConsent,
            format!("there was no consent {consent_id:?} in this project"),
        ),
        Some(in_force) => {
            integrity::acceptance_create(&mut data, &in_force, first.created_date, &mut problems);
            for k in [
                "consentRevision",
                "privacyNoticeId",
                "privacyNoticeRevision",
            ] {
                if first.data.get(k).is_none_or(Value::is_null) {
                    problems.push(
                        format!("data.{k}"),
                        ErrorCode::EvidenceMissing,
                        format!("the acceptance does not record its {k}"),
                    );
                }
            }
        }
    }
    report(out, first, not_erased(&first.data, problems));
    for pair in history.windows(2) {
        let (prev, v) = (&pair[0], &pair[1]);
        // Compared in the normal form a write gets (timestamps, numbers);
        // whether the version had the update form's shape is not the point.
        let (body, _) = validate::content_data(
            ContentType::ConsentAcceptance,
            Form::Update,
            &Value::Object(v.data.clone()),
        );
        let mut problems = Problems::new();
        integrity::acceptance_update(&body, &prev.data, v.last_modified_date, &mut problems);
        for k in prev.data.keys() {
            if !v.data.contains_key(k)
                && !["status", "note", "withdrawalDate"].contains(&k.as_str())
            {
                problems.push(
                    format!("data.{k}"),
                    ErrorCode::Immutable,
                    format!("an acceptance's {k} is evidence; this version dropped it"),
                );
            }
        }
        report(out, v, problems);
    }
}
