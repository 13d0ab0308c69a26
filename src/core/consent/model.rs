//! Consent domain and wire types, with the wire names of the consent
//! specification.
//!
//! Privacy notices, consents, consent acceptances and purpose catalogue
//! entries are content-store records ([`ContentRecord`]); the typed views
//! here ([`Consent`], [`PrivacyNotice`], [`ConsentAcceptance`],
//! [`PurposeName`]) read them leniently (the data was validated when
//! written). Purpose acceptances and withdrawals are [`PurposeEvent`]s, an
//! append-only log beside the content.
//!
//! Requests keep required fields as `Option` so that a missing one is
//! reported by validation with every other problem, rather than by serde.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::content::{get_i64, get_str, get_string, get_strings, get_time, ContentRecord};
use crate::string_enum;

string_enum! {
    /// Status of a consent. Only `PUBLISHED` consents are offered.
    pub enum ConsentStatus {
        /// Being written; not offered.
        Draft = "DRAFT",
        /// Offered to data subjects.
        Published = "PUBLISHED",
        /// Retired; not offered, its acceptances stay.
        Archived = "ARCHIVED",
    }
}

string_enum! {
    /// Status of a privacy notice.
    pub enum NoticeStatus {
        /// Being written.
        Draft = "DRAFT",
        /// In force.
        Published = "PUBLISHED",
        /// Retired.
        Archived = "ARCHIVED",
    }
}

string_enum! {
    /// Status of a consent acceptance or a purpose acceptance.
    pub enum AcceptanceStatus {
        /// Given.
        Accepted = "ACCEPTED",
        /// Withdrawn.
        Withdrawn = "WITHDRAWN",
    }
}

/// Why a consent is in the to-accept list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Reason {
    /// The subject never accepted this consent.
    New,
    /// The subject accepted an earlier revision.
    NewRevision,
    /// The subject accepted this revision of the consent, but its privacy
    /// notice has a new revision since.
    NewNoticeRevision,
    /// The subject's acceptance of this revision has expired.
    Expired,
    /// The subject's latest acceptance was withdrawn.
    Withdrawn,
}

/// A privacy notice (endpoint 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PrivacyNotice {
    /// Notice id.
    pub id: String,
    /// Name.
    pub name: String,
    /// English description.
    pub description_en: Option<String>,
    /// Thai description.
    pub description_th: Option<String>,
    /// `DRAFT`, `PUBLISHED` or `ARCHIVED`.
    pub status: NoticeStatus,
    /// Revision.
    pub revision: i64,
}

impl PrivacyNotice {
    /// The language of the notice's text (BCP 47): `en` or `th` when it has
    /// a text in that language only, `mul` when it has both, `und` when
    /// neither — what an acceptance records when the application does not
    /// say which text it showed.
    pub fn language(&self) -> &'static str {
        let has = |t: &Option<String>| t.as_deref().is_some_and(|t| !t.trim().is_empty());
        match (has(&self.description_en), has(&self.description_th)) {
            (true, false) => "en",
            (false, true) => "th",
            (true, true) => "mul",
            (false, false) => "und",
        }
    }

    /// The notice stored in a content record.
    pub fn from_record(r: &ContentRecord) -> Self {
        let d = &r.data;
        PrivacyNotice {
            id: r.id.clone(),
            name: get_str(d, "name").unwrap_or_default().to_owned(),
            description_en: get_str(d, "descriptionEn").map(str::to_owned),
            description_th: get_str(d, "descriptionTh").map(str::to_owned),
            status: NoticeStatus::parse(get_str(d, "status").unwrap_or_default()),
            revision: get_i64(d, "revision").unwrap_or_default(),
        }
    }
}

/// A consent as the application-facing interface shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Consent {
    /// Consent id.
    pub id: String,
    /// Name.
    pub name: String,
    /// English description.
    pub description_en: Option<String>,
    /// Application the consent belongs to.
    pub application: String,
    /// Purpose codes.
    pub purposes: Vec<String>,
    /// Lifetime of one acceptance in whole days; `null` or 0: never expires.
    pub lifespan: Option<i64>,
    /// Id of the privacy notice.
    pub privacy_notice_ref: String,
    /// Revision; a new one asks everyone again.
    pub revision: i64,
    /// `DRAFT`, `PUBLISHED` or `ARCHIVED`.
    pub status: ConsentStatus,
    /// Free reference.
    pub ref1: Option<String>,
    /// Free reference.
    pub ref2: Option<String>,
    /// Free reference.
    pub ref3: Option<String>,
}

impl Consent {
    /// The consent stored in a content record.
    pub fn from_record(r: &ContentRecord) -> Self {
        let d = &r.data;
        let s = |k: &str| get_str(d, k).map(str::to_owned);
        Consent {
            id: r.id.clone(),
            name: s("name").unwrap_or_default(),
            description_en: s("descriptionEn"),
            application: s("application").unwrap_or_default(),
            purposes: get_strings(d, "purposes").unwrap_or_default(),
            lifespan: get_i64(d, "lifespan"),
            privacy_notice_ref: s("privacyNoticeRef").unwrap_or_default(),
            revision: get_i64(d, "revision").unwrap_or_default(),
            status: ConsentStatus::parse(get_str(d, "status").unwrap_or_default()),
            ref1: s("ref1"),
            ref2: s("ref2"),
            ref3: s("ref3"),
        }
    }

    /// Whether it is offered.
    pub fn is_published(&self) -> bool {
        self.status == ConsentStatus::Published
    }
}

/// One entry of the to-accept list: the consent and why it is listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
pub struct ToAccept {
    /// The consent's fields.
    #[serde(flatten)]
    pub consent: Consent,
    /// Why the subject has to accept it (again).
    pub reason: Reason,
}

/// The body of "accept consent" (endpoint 3).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AcceptConsentRequest {
    /// Application (required).
    #[serde(default)]
    pub app: Option<String>,
    /// The subject (required).
    #[serde(default)]
    pub data_subject: Option<String>,
    /// The consent (required).
    #[serde(default)]
    pub consent_id: Option<String>,
    /// Accepted purposes, a subset of the consent's; omitted: all of them.
    #[serde(default)]
    pub purposes: Option<Vec<String>>,
    /// Context of acceptance (required).
    #[serde(default)]
    pub user_agent: Option<String>,
    /// Context of acceptance (required).
    #[serde(default)]
    pub country: Option<String>,
    /// Context of acceptance (required).
    #[serde(default)]
    pub local_ip: Option<String>,
    /// Context of acceptance (required).
    #[serde(default)]
    pub os_version: Option<String>,
    /// Context of acceptance (required).
    #[serde(default)]
    pub model: Option<String>,
    /// Context of acceptance (required).
    #[serde(default)]
    pub device_fingerprint_id: Option<String>,
    /// Free note.
    #[serde(default)]
    pub note: Option<String>,
    /// The language of the notice and consent text the person was shown, a
    /// BCP 47 tag such as `en` or `th`. Omitted: the notice's language when
    /// it has a text in one language only, else `mul` (both) or `und`
    /// (none). The acceptance and its receipt record it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

/// A consent acceptance as the application-facing interface returns it,
/// with what the subject was shown pinned beside the spec's fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ConsentAcceptance {
    /// Acceptance id (the content id of its `svc-consent-acceptance-v1`
    /// record).
    pub id: String,
    /// Application of the consent.
    pub consent_application: String,
    /// When accepted.
    pub acceptance_date: DateTime<Utc>,
    /// When it expires; `null`: never.
    pub expired_date: Option<DateTime<Utc>>,
    /// The consent.
    pub consent_id: String,
    /// The subject.
    pub data_subject: String,
    /// Context of acceptance.
    pub user_agent: String,
    /// Context of acceptance.
    pub country: String,
    /// Context of acceptance.
    pub local_ip: String,
    /// Context of acceptance.
    pub os_version: String,
    /// Context of acceptance.
    pub model: String,
    /// Context of acceptance.
    pub device_fingerprint_id: String,
    /// Accepted purposes.
    pub purposes: Vec<String>,
    /// Free note.
    pub note: String,
    /// `ACCEPTED` or `WITHDRAWN`.
    pub status: AcceptanceStatus,
    /// Revision of the consent accepted.
    pub consent_revision: Option<i64>,
    /// Privacy notice shown.
    pub privacy_notice_id: Option<String>,
    /// Revision of the privacy notice shown.
    pub privacy_notice_revision: Option<i64>,
    /// The language of the text shown (BCP 47); `null` for acceptances
    /// that did not record it.
    pub language: Option<String>,
}

impl ConsentAcceptance {
    /// The acceptance stored in a content record.
    pub fn from_record(r: &ContentRecord) -> Self {
        let d = &r.data;
        let s = |k: &str| get_str(d, k).unwrap_or_default().to_owned();
        ConsentAcceptance {
            id: r.id.clone(),
            consent_application: get_string(d, "consentApplication")
                .or_else(|| get_string(d, "application"))
                .unwrap_or_default(),
            acceptance_date: get_time(d, "acceptanceDate").unwrap_or(r.created_date),
            expired_date: get_time(d, "expiredDate"),
            consent_id: s("consentId"),
            data_subject: s("dataSubject"),
            user_agent: s("userAgent"),
            country: s("country"),
            local_ip: s("localIp"),
            os_version: s("osVersion"),
            model: s("model"),
            device_fingerprint_id: s("deviceFingerprintId"),
            purposes: get_strings(d, "purposes").unwrap_or_default(),
            note: s("note"),
            status: AcceptanceStatus::parse(get_str(d, "status").unwrap_or_default()),
            consent_revision: get_i64(d, "consentRevision"),
            privacy_notice_id: get_string(d, "privacyNoticeId"),
            privacy_notice_revision: get_i64(d, "privacyNoticeRevision"),
            language: get_string(d, "language"),
        }
    }
}

/// One purpose of the purpose options (endpoint 4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PurposeOption {
    /// Purpose code.
    pub code: String,
    /// Whether the subject's latest event for this purpose is an acceptance
    /// that has not expired.
    pub accepted: bool,
    /// English name from the purpose catalogue; empty when absent.
    pub name_en: String,
    /// Thai name from the purpose catalogue; empty when absent.
    pub name_th: String,
    /// The consent that lists the purpose.
    pub consent_id: String,
}

/// A purpose catalogue entry (`svc-purpose-v1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PurposeName {
    /// Purpose code.
    pub code: String,
    /// English name.
    pub name_en: String,
    /// Thai name.
    pub name_th: String,
}

impl PurposeName {
    /// The entry stored in a content record.
    pub fn from_record(r: &ContentRecord) -> Self {
        let s = |k: &str| get_str(&r.data, k).unwrap_or_default().to_owned();
        PurposeName {
            code: s("code"),
            name_en: s("nameEn"),
            name_th: s("nameTh"),
        }
    }
}

/// The body of "accept purpose" and "withdraw purpose" (endpoints 5, 6).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PurposeRequest {
    /// Application (required).
    #[serde(default)]
    pub app: Option<String>,
    /// The subject (required).
    #[serde(default)]
    pub data_subject: Option<String>,
    /// The purpose code (required).
    #[serde(default)]
    pub purpose_code: Option<String>,
}

/// One recorded purpose acceptance or withdrawal. Never updated: every
/// accept and every withdraw appends one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PurposeEvent {
    /// Event id (a UUID chosen by the service).
    pub id: String,
    /// Project.
    pub project_id: String,
    /// The subject.
    pub data_subject: String,
    /// Application.
    pub app: String,
    /// Purpose code.
    pub purpose_code: String,
    /// `ACCEPTED` or `WITHDRAWN`.
    pub status: AcceptanceStatus,
    /// On an acceptance: the consent whose lifespan set the expiry.
    pub consent_id: Option<String>,
    /// On an acceptance: when; on a withdrawal: that of the acceptance it
    /// ends (`null` when there was none).
    pub acceptance_date: Option<DateTime<Utc>>,
    /// Likewise for the expiry; `null` also means "never".
    pub expired_date: Option<DateTime<Utc>>,
    /// On a withdrawal: when.
    pub withdrawal_date: Option<DateTime<Utc>>,
    /// When the service recorded it.
    pub recorded_at: DateTime<Utc>,
    /// Store-assigned position in the store's append order (see
    /// [`ContentRecord::seq`]); ignored when appending.
    pub seq: i64,
}

/// The response of "accept purpose" and "withdraw purpose".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PurposeAcceptance {
    /// Event id.
    pub id: String,
    /// The subject.
    pub data_subject: String,
    /// Application.
    pub consent_application: String,
    /// Purpose code.
    pub purpose_code: String,
    /// `ACCEPTED` or `WITHDRAWN`.
    pub status: AcceptanceStatus,
    /// When accepted (kept on withdrawal; `null` when never accepted).
    pub acceptance_date: Option<DateTime<Utc>>,
    /// When the acceptance expires (`null`: never, or never accepted).
    pub expired_date: Option<DateTime<Utc>>,
    /// When withdrawn; `null` until then.
    pub withdrawal_date: Option<DateTime<Utc>>,
}

impl From<&PurposeEvent> for PurposeAcceptance {
    fn from(e: &PurposeEvent) -> Self {
        PurposeAcceptance {
            id: e.id.clone(),
            data_subject: e.data_subject.clone(),
            consent_application: e.app.clone(),
            purpose_code: e.purpose_code.clone(),
            status: e.status.clone(),
            acceptance_date: e.acceptance_date,
            expired_date: e.expired_date,
            withdrawal_date: e.withdrawal_date,
        }
    }
}

/// One record of a subject's history, in the order recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum HistoryEntry {
    /// A version of one of the subject's consent acceptances (its creation,
    /// or a replace through the content store).
    ConsentAcceptance(ContentRecord),
    /// A purpose acceptance or withdrawal.
    Purpose(PurposeEvent),
}

impl HistoryEntry {
    /// When it was recorded.
    pub fn recorded_at(&self) -> DateTime<Utc> {
        match self {
            HistoryEntry::ConsentAcceptance(r) => r.last_modified_date,
            HistoryEntry::Purpose(e) => e.recorded_at,
        }
    }

    /// Its position in the store's append order.
    pub fn seq(&self) -> i64 {
        match self {
            HistoryEntry::ConsentAcceptance(r) => r.seq,
            HistoryEntry::Purpose(e) => e.seq,
        }
    }
}

/// What a subject had agreed to in one application at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SubjectState {
    /// The instant.
    pub at: DateTime<Utc>,
    /// The subject.
    pub data_subject: String,
    /// The application.
    pub application: String,
    /// Consents in force, in the order of the application's consents.
    pub consents: Vec<AgreedConsent>,
    /// Purposes in force, by code.
    pub purposes: Vec<AgreedPurpose>,
}

/// A consent in force at an instant, with what the subject was shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgreedConsent {
    /// The consent.
    pub consent_id: String,
    /// The revision accepted.
    pub consent_revision: Option<i64>,
    /// The acceptance that is in force.
    pub acceptance_id: String,
    /// Its acceptance date.
    pub acceptance_date: Option<DateTime<Utc>>,
    /// Its expiry (`null`: never).
    pub expired_date: Option<DateTime<Utc>>,
    /// The privacy notice shown.
    pub privacy_notice_id: Option<String>,
    /// Its revision.
    pub privacy_notice_revision: Option<i64>,
    /// The purposes it granted.
    pub purposes: Vec<String>,
}

string_enum! {
    /// What kind of record granted a purpose.
    pub enum GrantSource {
        /// A consent acceptance that listed the purpose.
        ConsentAcceptance = "CONSENT_ACCEPTANCE",
        /// A purpose acceptance.
        PurposeAcceptance = "PURPOSE_ACCEPTANCE",
    }
}

/// A purpose in force at an instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgreedPurpose {
    /// Purpose code.
    pub code: String,
    /// When the granting record was recorded.
    pub since: DateTime<Utc>,
    /// Its expiry (`null`: never).
    pub expired_date: Option<DateTime<Utc>>,
    /// The kind of granting record.
    pub source: GrantSource,
    /// Its id (acceptance content id or purpose event id).
    pub source_id: String,
}

/// When an acceptance made at `at` expires: `lifespan` whole days later;
/// `None` (never) when the lifespan is absent or 0.
pub fn expiry(at: DateTime<Utc>, lifespan_days: Option<i64>) -> Option<DateTime<Utc>> {
    match lifespan_days {
        Some(d) if d > 0 => at.checked_add_signed(Duration::try_days(d)?),
        _ => None,
    }
}

/// Whether a grant expiring at `expired` has expired at `t`.
pub fn is_expired(expired: Option<DateTime<Utc>>, t: DateTime<Utc>) -> bool {
    expired.is_some_and(|e| e <= t)
}
