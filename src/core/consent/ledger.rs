//! The consent ledger: a per-project hash chain over every consent event,
//! so that a change to the history after the fact can be shown.
//!
//! Every stored consent event — each version of a consent acceptance and
//! each purpose event — is appended to its project's ledger **in the same
//! store transaction** as the event itself. An entry is a JSON object:
//!
//! | Field | Meaning |
//! |---|---|
//! | `position` | 1, 2, 3, … within the project |
//! | `prevHash` | `hash` of the entry before (64 `0`s for the first) |
//! | `projectId`, `kind`, `recordId`, `version`, `seq`, `recordedAt` | the event: `consentAcceptance` (with the acceptance version) or `purposeEvent` |
//! | `evidence` | what the event says, **without** personal data: consent, revisions, notice, purposes, status, dates |
//! | `subject` | a commitment to the personal data: hex SHA-256 of the canonical JSON of `{"personal": {...}, "salt": "<random>"}` |
//! | `hash` | hex SHA-256 of the canonical JSON of the entry without `hash` |
//!
//! The canonical JSON is that of RFC 8785 (JSON Canonicalization Scheme)
//! for the values entries hold: object members sorted by the UTF-16 code
//! units of their names, no whitespace, strings escaped as ECMAScript's
//! `JSON.stringify` does, integers in decimal. (Entries hold no fractional
//! numbers; one would be written in serde_json's shortest form.)
//!
//! **Personal data stays out of the chain.** `dataSubject`, the device
//! context (`userAgent`, `country`, `localIp`, `osVersion`, `model`,
//! `deviceFingerprintId`) and `note` are covered only through `subject`:
//! the salt (random, 128 bits of which 122 random) is kept by the store
//! beside the entry, outside the hashed text, and is never exported.
//! Erasing a subject deletes the salts of their entries: the commitment
//! then binds to nothing anyone can reproduce, and every hash still
//! verifies.
//!
//! [`verify`] checks a ledger read back (from the store, or from an
//! exported JSON Lines file with [`verify_jsonl`]) and names the first
//! entry that was changed, removed or reordered.

use std::io::BufRead;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::content::{format_time, ContentRecord};
use super::model::PurposeEvent;
use super::receipt::EntryRef;
use crate::string_enum;

/// The `prevHash` of a project's first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The attributes of an acceptance that are personal data: kept out of the
/// chain (see the module docs) and pseudonymized by erasure.
pub const PERSONAL_FIELDS: &[&str] = &[
    "dataSubject",
    "userAgent",
    "country",
    "localIp",
    "osVersion",
    "model",
    "deviceFingerprintId",
    "note",
];

pub use super::canonical::canonical_json;
use super::canonical::{write_int, write_object, write_string};

pub use crate::core::hash::sha256_hex;
use crate::core::hash::sha256_hex_of;

/// The commitment to personal data: hex SHA-256 of the canonical JSON of
/// `{"personal": personal, "salt": salt}`.
pub fn commitment(personal: &Map<String, Value>, salt: &str) -> String {
    commitment_of(personal, |_| true, salt)
}

/// [`commitment`] of the members of `data` that `keep` keeps, written
/// without copying them out first.
fn commitment_of(data: &Map<String, Value>, keep: impl Fn(&str) -> bool, salt: &str) -> String {
    let mut text = String::with_capacity(256);
    text.push_str("{\"personal\":");
    write_object(data, keep, &mut text);
    text.push_str(",\"salt\":");
    write_string(salt, &mut text);
    text.push('}');
    sha256_hex(text.as_bytes())
}

fn is_personal(name: &str) -> bool {
    PERSONAL_FIELDS.contains(&name)
}

/// A new random salt for a commitment.
pub fn new_salt() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// An entry before it has a place in the chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsealed {
    /// Project.
    pub project_id: String,
    /// `consentAcceptance` or `purposeEvent`.
    pub kind: &'static str,
    /// The acceptance id or the purpose event id.
    pub record_id: String,
    /// The acceptance version (1 for a purpose event).
    pub version: i64,
    /// The store's `seq` of the record.
    pub seq: i64,
    /// When the record was recorded.
    pub recorded_at: DateTime<Utc>,
    /// The non-personal fields, as canonical JSON (the entry's
    /// `evidence`).
    pub evidence: String,
    /// The commitment to the personal fields.
    pub subject: String,
    /// The salt of the commitment (kept by the store, outside the chain).
    pub salt: String,
}

/// An entry with its place: what a store keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    /// Its position.
    pub position: i64,
    /// Its hash.
    pub hash: String,
    /// The canonical JSON of the whole entry (with `hash`): the stored text.
    pub text: String,
}

/// The ledger entry of a consent-acceptance version.
pub fn for_acceptance(record: &ContentRecord, salt: String) -> Unsealed {
    let mut evidence = String::with_capacity(512);
    write_object(&record.data, |k| !is_personal(k), &mut evidence);
    Unsealed {
        project_id: record.project_id.clone(),
        kind: "consentAcceptance",
        record_id: record.id.clone(),
        version: record.version,
        seq: record.seq,
        recorded_at: record.last_modified_date,
        evidence,
        subject: commitment_of(&record.data, is_personal, &salt),
        salt,
    }
}

/// The ledger entry of a purpose event.
pub fn for_purpose_event(e: &PurposeEvent, salt: String) -> Unsealed {
    let time = |t: Option<DateTime<Utc>>| t.map(format_time).into();
    let mut evidence = Map::new();
    evidence.insert("app".into(), e.app.clone().into());
    evidence.insert("purposeCode".into(), e.purpose_code.clone().into());
    evidence.insert("status".into(), e.status.as_str().into());
    evidence.insert("consentId".into(), e.consent_id.clone().into());
    evidence.insert("acceptanceDate".into(), time(e.acceptance_date));
    evidence.insert("expiredDate".into(), time(e.expired_date));
    evidence.insert("withdrawalDate".into(), time(e.withdrawal_date));
    let mut personal = Map::new();
    personal.insert("dataSubject".into(), e.data_subject.clone().into());
    Unsealed {
        project_id: e.project_id.clone(),
        kind: "purposeEvent",
        record_id: e.id.clone(),
        version: 1,
        seq: e.seq,
        recorded_at: e.recorded_at,
        evidence: canonical_json(&Value::Object(evidence)),
        subject: commitment(&personal, &salt),
        salt,
    }
}

impl Unsealed {
    /// What a receipt needs of the entry once sealed as `sealed`.
    pub fn reference(&self, sealed: &Sealed) -> EntryRef {
        EntryRef {
            position: sealed.position,
            hash: sealed.hash.clone(),
            subject: self.subject.clone(),
        }
    }

    /// Places the entry after the entry at `prev` (`None`: the first).
    ///
    /// The canonical JSON of the entry is written member by member in its
    /// sorted order (`evidence`, `hash`, `kind`, `position`, `prevHash`,
    /// `projectId`, `recordId`, `recordedAt`, `seq`, `subject`,
    /// `version`): the hashed text is the same without `hash`, so both
    /// share the members after it.
    pub fn seal(&self, prev: Option<(i64, &str)>) -> Sealed {
        const OPEN: &str = "{\"evidence\":";
        let (position, prev_hash) = match prev {
            Some((p, h)) => (p + 1, h),
            None => (1, GENESIS),
        };
        let mut rest = String::with_capacity(400);
        rest.push_str(",\"kind\":");
        write_string(self.kind, &mut rest);
        rest.push_str(",\"position\":");
        write_int(position, &mut rest);
        rest.push_str(",\"prevHash\":");
        write_string(prev_hash, &mut rest);
        rest.push_str(",\"projectId\":");
        write_string(&self.project_id, &mut rest);
        rest.push_str(",\"recordId\":");
        write_string(&self.record_id, &mut rest);
        rest.push_str(",\"recordedAt\":");
        write_string(&format_time(self.recorded_at), &mut rest);
        rest.push_str(",\"seq\":");
        write_int(self.seq, &mut rest);
        rest.push_str(",\"subject\":");
        write_string(&self.subject, &mut rest);
        rest.push_str(",\"version\":");
        write_int(self.version, &mut rest);
        rest.push('}');
        let hash = sha256_hex_of(&[OPEN.as_bytes(), self.evidence.as_bytes(), rest.as_bytes()]);
        let mut text = String::with_capacity(OPEN.len() + self.evidence.len() + rest.len() + 80);
        text.push_str(OPEN);
        text.push_str(&self.evidence);
        text.push_str(",\"hash\":\"");
        text.push_str(&hash);
        text.push('"');
        text.push_str(&rest);
        Sealed {
            position,
            hash,
            text,
        }
    }
}

string_enum! {
    /// What is wrong with a ledger.
    pub enum ProblemKind {
        /// The entry's content no longer matches its hash, or the next
        /// entry does not follow from it (its hash was recomputed).
        Changed = "CHANGED",
        /// The entry at this position is missing.
        Removed = "REMOVED",
        /// The entry at this place carries another position: entries were
        /// moved.
        Reordered = "REORDERED",
        /// The text is not a ledger entry.
        Unreadable = "UNREADABLE",
    }
}

/// The first problem of a ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LedgerProblem {
    /// The position of the entry concerned.
    pub position: i64,
    /// What is wrong.
    pub kind: ProblemKind,
    /// In words.
    pub detail: String,
}

/// The result of checking a ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LedgerReport {
    /// Whether every entry checked out.
    pub valid: bool,
    /// Entries read.
    pub entries: u64,
    /// The hash of the last entry read (`null` when empty).
    pub last_hash: Option<String>,
    /// The first problem found.
    pub problem: Option<LedgerProblem>,
}

/// The last entry a store recorded for a project (kept apart from the
/// entries, so that removing the newest entries shows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerHead {
    /// Its position.
    pub position: i64,
    /// Its hash.
    pub hash: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Link {
    position: i64,
    prev_hash: String,
    hash: String,
}

struct Read {
    link: Option<Link>,
    /// Whether the text hashes to its `hash`.
    intact: bool,
}

fn read(text: &str) -> Read {
    let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(text) else {
        return Read {
            link: None,
            intact: false,
        };
    };
    let link: Option<Link> = serde_json::from_value(Value::Object(m.clone())).ok();
    let claimed = m.remove("hash");
    let intact = claimed.as_ref().and_then(Value::as_str)
        == Some(sha256_hex(canonical_json(&Value::Object(m)).as_bytes()).as_str());
    Read { link, intact }
}

fn problem(position: i64, kind: ProblemKind, detail: String) -> LedgerProblem {
    LedgerProblem {
        position,
        kind,
        detail,
    }
}

/// Checks a ledger: `entries` are the stored texts in stored order;
/// `head`, when known, is the store's record of the last entry. Reports
/// the first entry that was changed, removed or reordered.
pub fn verify<'a>(
    entries: impl IntoIterator<Item = &'a str>,
    head: Option<&LedgerHead>,
) -> LedgerReport {
    let reads: Vec<Read> = entries.into_iter().map(read).collect();
    let positions: Vec<Option<i64>> = reads
        .iter()
        .map(|r| r.link.as_ref().map(|l| l.position))
        .collect();
    let mut prev: Option<&Link> = None;
    let mut found = None;
    for (i, r) in reads.iter().enumerate() {
        let expected = prev.map_or(1, |p| p.position + 1);
        let Some(link) = &r.link else {
            found = Some(problem(
                expected,
                ProblemKind::Unreadable,
                format!("entry {} of the ledger is not a ledger entry", i + 1),
            ));
            break;
        };
        if link.position != expected {
            let later = positions[i + 1..].contains(&Some(expected));
            found = Some(if link.position < expected || later {
                problem(
                    link.position,
                    ProblemKind::Reordered,
                    format!(
                        "entry {} stands where entry {expected} belongs",
                        link.position
                    ),
                )
            } else {
                problem(
                    expected,
                    ProblemKind::Removed,
                    format!(
                        "entry {expected} is missing (the next one is {})",
                        link.position
                    ),
                )
            });
            break;
        }
        if !r.intact {
            found = Some(problem(
                link.position,
                ProblemKind::Changed,
                format!("entry {} does not match its hash", link.position),
            ));
            break;
        }
        let prev_hash = prev.map_or(GENESIS, |p| p.hash.as_str());
        if link.prev_hash != prev_hash {
            found = Some(problem(
                expected - 1,
                ProblemKind::Changed,
                format!(
                    "entry {} was changed: entry {expected} names another hash before it",
                    expected - 1
                ),
            ));
            break;
        }
        prev = Some(link);
    }
    if found.is_none() {
        if let Some(head) = head {
            let last = prev.map_or(0, |p| p.position);
            found = if head.position > last {
                Some(problem(
                    last + 1,
                    ProblemKind::Removed,
                    format!(
                        "entries {} to {} are missing (the ledger's head is {})",
                        last + 1,
                        head.position,
                        head.position
                    ),
                ))
            } else if prev.is_some_and(|p| p.hash != head.hash) || head.position < last {
                Some(problem(
                    head.position.max(1),
                    ProblemKind::Changed,
                    format!("entry {} differs from the ledger's head", head.position),
                ))
            } else {
                None
            };
        }
    }
    LedgerReport {
        valid: found.is_none(),
        entries: reads.len() as u64,
        last_hash: prev.map(|p| p.hash.clone()),
        problem: found,
    }
}

/// Whether the entry text `text` is the entry of record `record_id`,
/// version `version`, of `kind` (`consentAcceptance`, `purposeEvent`).
pub fn entry_is_of(text: &str, kind: &str, record_id: &str, version: i64) -> bool {
    /// The members compared; the others (the evidence) are skipped over,
    /// not built.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Of {
        kind: String,
        record_id: String,
        version: i64,
    }
    // A cheap test first: most entries are of other records.
    if !text.contains(record_id) {
        return false;
    }
    serde_json::from_str::<Of>(text)
        .is_ok_and(|o| o.kind == kind && o.record_id == record_id && o.version == version)
}

/// Checks an exported ledger: JSON Lines, one entry per line, in position
/// order (blank lines are skipped). A read error is returned as such.
pub fn verify_jsonl(
    reader: impl BufRead,
    head: Option<&LedgerHead>,
) -> std::io::Result<LedgerReport> {
    let mut lines = Vec::new();
    for line in reader.lines() {
        let line = line?;
        if !line.trim().is_empty() {
            lines.push(line);
        }
    }
    Ok(verify(lines.iter().map(String::as_str), head))
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
