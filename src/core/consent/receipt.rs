//! Consent receipts: what a person (or their app) keeps as proof of an
//! acceptance or withdrawal, with the fields of the Kantara Initiative
//! Consent Receipt v1.1 (also those of an ISO/IEC TS 27560 consent
//! record), bound to the consent ledger.
//!
//! Pure: [`for_acceptance`] builds the receipt of one acceptance version
//! from the record and its ledger entry, [`for_purpose_event`] that of a
//! purpose acceptance or withdrawal from its ledger entry; signing (JWS, Ed25519) is the
//! HTTP adapter's, which holds the key.
//!
//! The receipt names the subject by the ledger entry's `subject`
//! commitment, never by their identifier: a receipt handed to a third
//! party does not reveal who the person is, and erasure leaves nothing in
//! it to erase.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::content::{get_i64, get_str, get_string, get_strings, ContentRecord};

/// The Kantara Consent Receipt version the receipts follow.
pub const VERSION: &str = "KI-CR-v1.1.0";

/// Who the receipts name as controller (from configuration).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Controller {
    /// The controller's name (`piiController`).
    pub pii_controller: String,
    /// How to reach them (`contact`).
    pub contact: String,
    /// The jurisdiction of the controller (`jurisdiction`), such as `TH`.
    pub jurisdiction: String,
    /// Where the privacy policy is (`policyUrl`).
    pub policy_url: String,
}

impl Default for Controller {
    fn default() -> Self {
        Controller {
            pii_controller: "Accord".into(),
            contact: String::new(),
            jurisdiction: String::new(),
            policy_url: String::new(),
        }
    }
}

/// One purpose of a receipt's service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReceiptPurpose {
    /// The purpose code.
    pub purpose: String,
    /// `EXPLICIT`: the person took an action to agree.
    pub consent_type: String,
    /// When the consent ends: the acceptance's expiry, or `"withdrawal"`.
    pub termination: String,
    /// Whether data is disclosed to third parties under this purpose (not
    /// recorded by Accord: `false`).
    pub third_party_disclosure: bool,
}

/// The service (the application) a receipt covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReceiptService {
    /// The application.
    pub service: String,
    /// Its purposes agreed to.
    pub purposes: Vec<ReceiptPurpose>,
}

/// A consent receipt (the JWS payload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ConsentReceipt {
    /// [`VERSION`].
    pub version: String,
    /// `<acceptance id>.<version>`, or `<purpose event id>.1`.
    pub consent_receipt_id: String,
    /// The controller's jurisdiction.
    pub jurisdiction: String,
    /// Seconds since the epoch of the event (the server's record time).
    pub consent_timestamp: i64,
    /// How consent was collected: `recorded by <sub>`, the token of the
    /// application or person that recorded it.
    pub collection_method: String,
    /// The language of the notice and consent text shown (BCP 47), as the
    /// acceptance recorded it: `mul` for a notice with texts in several
    /// languages when the application did not say which it showed; `und`
    /// when nothing was recorded (purpose events, older acceptances).
    pub language: String,
    /// The subject, as the ledger's commitment (a pseudonym).
    pub pii_principal_id: String,
    /// The controller.
    pub pii_controllers: Vec<Controller>,
    /// The privacy policy.
    pub policy_url: String,
    /// What was agreed to.
    pub services: Vec<ReceiptService>,
    /// Whether sensitive data is concerned (not recorded: `false`).
    pub sensitive: bool,
    /// `ACCEPTED` or `WITHDRAWN`.
    pub status: String,
    /// The project.
    pub project_id: String,
    /// The consent and its revision.
    pub consent_id: String,
    /// The revision accepted.
    pub consent_revision: Option<i64>,
    /// The privacy notice shown, and its revision.
    pub privacy_notice_id: Option<String>,
    /// The notice revision shown.
    pub privacy_notice_revision: Option<i64>,
    /// The acceptance (`null` in the receipt of a purpose event).
    pub acceptance_id: Option<String>,
    /// The acceptance version (`null` in the receipt of a purpose event).
    pub acceptance_version: Option<i64>,
    /// What the receipt is of, as the ledger entry's `kind`:
    /// `consentAcceptance` (an acceptance version) or `purposeEvent` (a
    /// purpose acceptance or withdrawal).
    #[serde(default = "acceptance_kind")]
    pub event: String,
    /// The purpose event (`null` in the receipt of an acceptance).
    #[serde(default)]
    pub purpose_event_id: Option<String>,
    /// The screen shown, as the acceptance pinned it: the SHA-256 of its
    /// file (`null` when none).
    #[serde(default)]
    pub form_screen: Option<String>,
    /// The ledger entry of this event: its position…
    pub ledger_position: i64,
    /// …and its hash.
    pub ledger_hash: String,
}

fn acceptance_kind() -> String {
    "consentAcceptance".into()
}

/// What a receipt needs of the ledger entry of its event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryRef {
    /// Position.
    pub position: i64,
    /// Hash.
    pub hash: String,
    /// The subject commitment.
    pub subject: String,
}

impl EntryRef {
    /// Reads position, hash and subject from an entry's text.
    pub fn parse(text: &str) -> Option<Self> {
        /// The members read; the others (the evidence) are skipped over,
        /// not built.
        #[derive(Deserialize)]
        struct Members {
            position: i64,
            hash: String,
            subject: String,
        }
        let m: Members = serde_json::from_str(text).ok()?;
        Some(EntryRef {
            position: m.position,
            hash: m.hash,
            subject: m.subject,
        })
    }
}

/// The receipt of one acceptance version, whose ledger entry is `entry`.
pub fn for_acceptance(
    record: &ContentRecord,
    entry: &EntryRef,
    controller: &Controller,
) -> ConsentReceipt {
    let d = &record.data;
    let status = get_str(d, "status").unwrap_or_default().to_owned();
    let termination = get_string(d, "expiredDate").unwrap_or_else(|| "withdrawal".into());
    let purposes = get_strings(d, "purposes")
        .unwrap_or_default()
        .into_iter()
        .map(|p| ReceiptPurpose {
            purpose: p,
            consent_type: "EXPLICIT".into(),
            termination: termination.clone(),
            third_party_disclosure: false,
        })
        .collect();
    let at: DateTime<Utc> = record.last_modified_date;
    ConsentReceipt {
        version: VERSION.into(),
        consent_receipt_id: format!("{}.{}", record.id, record.version),
        jurisdiction: controller.jurisdiction.clone(),
        consent_timestamp: at.timestamp(),
        collection_method: format!("recorded by {}", record.last_modified_by),
        language: get_string(d, "language").unwrap_or_else(|| "und".into()),
        pii_principal_id: entry.subject.clone(),
        pii_controllers: vec![controller.clone()],
        policy_url: controller.policy_url.clone(),
        services: vec![ReceiptService {
            service: get_string(d, "consentApplication").unwrap_or_default(),
            purposes,
        }],
        sensitive: false,
        status,
        project_id: record.project_id.clone(),
        consent_id: get_string(d, "consentId").unwrap_or_default(),
        consent_revision: get_i64(d, "consentRevision"),
        privacy_notice_id: get_string(d, "privacyNoticeId"),
        privacy_notice_revision: get_i64(d, "privacyNoticeRevision"),
        acceptance_id: Some(record.id.clone()),
        acceptance_version: Some(record.version),
        event: acceptance_kind(),
        purpose_event_id: None,
        form_screen: get_string(d, "formScreen"),
        ledger_position: entry.position,
        ledger_hash: entry.hash.clone(),
    }
}

/// The receipt of a purpose acceptance or withdrawal, from the text of its
/// ledger entry (which holds everything a receipt says of it: the
/// application, the purpose, the status, the owning consent and the
/// dates); `None` when the text is not a purpose event's entry. The
/// purpose routes record neither the token nor the language:
/// `collectionMethod` names the route, `language` is `und`.
pub fn for_purpose_event(entry_text: &str, controller: &Controller) -> Option<ConsentReceipt> {
    let v: Value = serde_json::from_str(entry_text).ok()?;
    if v.get("kind")?.as_str()? != "purposeEvent" {
        return None;
    }
    let entry = EntryRef::parse(entry_text)?;
    let evidence = v.get("evidence")?.as_object()?;
    let text = |k: &str| {
        evidence
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let status = text("status").unwrap_or_default();
    let withdrawn = status == "WITHDRAWN";
    let at = DateTime::parse_from_rfc3339(v.get("recordedAt")?.as_str()?).ok()?;
    let id = v.get("recordId")?.as_str()?.to_owned();
    let consent_id = text("consentId");
    Some(ConsentReceipt {
        version: VERSION.into(),
        consent_receipt_id: format!("{id}.1"),
        jurisdiction: controller.jurisdiction.clone(),
        consent_timestamp: at.timestamp(),
        collection_method: if withdrawn {
            "purpose withdrawal".into()
        } else {
            "purpose acceptance".into()
        },
        language: "und".into(),
        pii_principal_id: entry.subject.clone(),
        pii_controllers: vec![controller.clone()],
        policy_url: controller.policy_url.clone(),
        services: vec![ReceiptService {
            service: text("app").unwrap_or_default(),
            purposes: vec![ReceiptPurpose {
                purpose: text("purposeCode").unwrap_or_default(),
                consent_type: "EXPLICIT".into(),
                termination: match (withdrawn, text("expiredDate")) {
                    (false, Some(expiry)) => expiry,
                    _ => "withdrawal".into(),
                },
                third_party_disclosure: false,
            }],
        }],
        sensitive: false,
        status,
        project_id: v.get("projectId")?.as_str()?.to_owned(),
        consent_id: consent_id.unwrap_or_default(),
        consent_revision: None,
        privacy_notice_id: None,
        privacy_notice_revision: None,
        acceptance_id: None,
        acceptance_version: None,
        event: "purposeEvent".into(),
        purpose_event_id: Some(id),
        form_screen: None,
        ledger_position: entry.position,
        ledger_hash: entry.hash,
    })
}
