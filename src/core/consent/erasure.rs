//! What erasing a data subject does to their records, as pure functions:
//! the keyed pseudonym that replaces `dataSubject`, and the acceptance
//! data with its personal attributes removed.
//!
//! | Attribute | After erasure | Why |
//! |---|---|---|
//! | `dataSubject` | `pseudonym:` + hex HMAC-SHA256(key, project, subject) | the same person gets the same pseudonym, so their erased records stay one history; without the key nobody can link it back |
//! | `localIp`, `deviceFingerprintId`, `userAgent`, `model`, `osVersion`, `note` | `""` | identify a device or a person, and prove nothing about the consent |
//! | everything else (`consentId`, revisions, notice, purposes, status, dates, `country`, `consentApplication`) | kept | the proof that consent was given, to what, shown which text, when, until when, and under which jurisdiction (GDPR Art. 7(1), 17(3)(b)/(e); PDPA s.19, s.33) |
//!
//! The ledger ([`super::ledger`]) never held these attributes — only a
//! salted commitment to them; erasure deletes the salts, so the
//! commitments bind to nothing anyone can reproduce, and every hash still
//! verifies.

use std::fmt::Write;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::Sha256;

/// The prefix of every pseudonym: an erased record says so.
pub const PSEUDONYM_PREFIX: &str = "pseudonym:";

/// The attributes of an acceptance that erasure empties (`dataSubject` is
/// replaced by the pseudonym instead).
pub const ERASED_FIELDS: &[&str] = &[
    "localIp",
    "deviceFingerprintId",
    "userAgent",
    "model",
    "osVersion",
    "note",
];

/// Shortest pseudonym key accepted, in bytes.
pub const MIN_KEY_BYTES: usize = 32;

/// The key of the pseudonyms: kept in the configuration, never in the
/// store (whoever holds both could test guesses of an identifier).
#[derive(Clone)]
pub struct PseudonymKey(Vec<u8>);

impl std::fmt::Debug for PseudonymKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PseudonymKey(..)")
    }
}

impl PseudonymKey {
    /// A key of at least [`MIN_KEY_BYTES`] bytes, else `None`.
    pub fn new(key: &[u8]) -> Option<Self> {
        (key.len() >= MIN_KEY_BYTES).then(|| PseudonymKey(key.to_vec()))
    }

    /// The pseudonym of `subject` in `project`.
    pub fn pseudonym(&self, project: &str, subject: &str) -> String {
        // The key length is never refused by HMAC.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        // Length-prefixed, so that (project, subject) pairs cannot collide.
        mac.update(&(project.len() as u64).to_be_bytes());
        mac.update(project.as_bytes());
        mac.update(subject.as_bytes());
        let digest = mac.finalize().into_bytes();
        let mut out = String::from(PSEUDONYM_PREFIX);
        for b in digest {
            let _ = write!(out, "{b:02x}");
        }
        out
    }
}

/// Whether `subject` is a pseudonym (an erased subject).
pub fn is_pseudonym(subject: &str) -> bool {
    subject.starts_with(PSEUDONYM_PREFIX)
}

/// An acceptance's `data` after erasure: `dataSubject` set to
/// `pseudonym`, the [`ERASED_FIELDS`] emptied (those present), the rest
/// kept.
pub fn erase_acceptance(data: &Map<String, Value>, pseudonym: &str) -> Map<String, Value> {
    let mut out = data.clone();
    out.insert("dataSubject".into(), pseudonym.into());
    for k in ERASED_FIELDS {
        if let Some(v) = out.get_mut(*k) {
            if !v.is_null() {
                *v = Value::String(String::new());
            }
        }
    }
    out
}

/// What a store changed when erasing a subject.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ErasureCounts {
    /// Acceptance versions rewritten.
    pub acceptance_versions: u64,
    /// Purpose events rewritten.
    pub purpose_events: u64,
    /// Ledger entries whose commitment salt was deleted.
    pub ledger_salts: u64,
}

/// The answer of an erasure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ErasureReport {
    /// The pseudonym that now stands for the subject.
    pub pseudonym: String,
    /// What was changed.
    pub erased: ErasureCounts,
    /// The attributes replaced (`dataSubject`) or emptied.
    pub erased_fields: Vec<String>,
    /// What was kept, as proof that consent existed.
    pub kept: Vec<String>,
}

impl ErasureReport {
    /// The report of an erasure that changed `erased`.
    pub fn new(pseudonym: String, erased: ErasureCounts) -> Self {
        ErasureReport {
            pseudonym,
            erased,
            erased_fields: std::iter::once("dataSubject")
                .chain(ERASED_FIELDS.iter().copied())
                .map(str::to_owned)
                .collect(),
            kept: [
                "consentId",
                "consentApplication",
                "consentRevision",
                "privacyNoticeId",
                "privacyNoticeRevision",
                "purposes",
                "status",
                "acceptanceDate",
                "expiredDate",
                "withdrawalDate",
                "receivedDate",
                "language",
                "formScreen",
                "country",
                "ledger entries",
            ]
            .into_iter()
            .map(str::to_owned)
            .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pseudonyms_are_keyed_stable_and_separate_projects() {
        let k = PseudonymKey::new(&[7; 32]).unwrap();
        let other = PseudonymKey::new(&[8; 32]).unwrap();
        assert!(PseudonymKey::new(&[7; 31]).is_none());
        let p = k.pseudonym("shop", "u1");
        assert_eq!(p, k.pseudonym("shop", "u1"));
        assert_ne!(p, other.pseudonym("shop", "u1"));
        assert_ne!(p, k.pseudonym("shop2", "u1"));
        assert_ne!(k.pseudonym("ab", "c"), k.pseudonym("a", "bc"));
        assert!(is_pseudonym(&p) && p.len() == PSEUDONYM_PREFIX.len() + 64);
        assert_eq!(format!("{k:?}"), "PseudonymKey(..)");
    }

    #[test]
    fn erasure_keeps_the_proof() {
        let data = json!({"dataSubject": "u1", "localIp": "10.0.0.1", "note": "x", "model": null,
                          "consentId": "c", "purposes": ["email"], "country": "TH"});
        let Value::Object(data) = data else {
            unreachable!()
        };
        let out = erase_acceptance(&data, "pseudonym:ab");
        assert_eq!(
            Value::Object(out),
            json!({"dataSubject": "pseudonym:ab", "localIp": "", "note": "", "model": null,
                   "consentId": "c", "purposes": ["email"], "country": "TH"})
        );
    }
}
