//! Every budget and size limit of the crate, in one place.
//!
//! Limits keep one request or one campaign from costing the service more
//! than a bounded amount of memory and time. Requests over a limit get
//! [`ErrorKind::LimitExceeded`](crate::ErrorKind::LimitExceeded) (HTTP 413);
//! campaigns over a limit get a validation error (HTTP 422) naming the
//! field. `docs/limits.md` lists the same values.

/// Campaigns one project may hold.
pub const MAX_CAMPAIGNS_PER_PROJECT: u64 = 100_000;
/// Rules one campaign may hold.
pub const MAX_RULES_PER_CAMPAIGN: usize = 100;
/// `when` groups one rule may hold.
pub const MAX_GROUPS_PER_RULE: usize = 50;
/// Conditions one rule may hold, over all its groups.
pub const MAX_CONDITIONS_PER_RULE: usize = 200;
/// Benefits (`then` entries) one rule may hold.
pub const MAX_BENEFITS_PER_RULE: usize = 50;
/// Data items one benefit may hold.
pub const MAX_DATA_PER_BENEFIT: usize = 50;
/// Quotas one campaign may hold.
pub const MAX_QUOTAS_PER_CAMPAIGN: usize = 20;
/// Longest text field of a campaign (name, description, refCode, data values…), in bytes.
pub const MAX_TEXT_LEN: usize = 4096;
/// Longest `refCode`, in bytes.
pub const MAX_REF_CODE_LEN: usize = 128;

/// Cart items one search or redeem request may carry.
pub const MAX_CART_ITEMS: usize = 1000;
/// Tags one cart item may carry.
pub const MAX_TAGS_PER_ITEM: usize = 100;
/// Attributes one request may carry.
pub const MAX_ATTRIBUTES: usize = 256;
/// Elements of one array attribute.
pub const MAX_ATTRIBUTE_ARRAY_LEN: usize = 1000;
/// Longest string anywhere in a request (attribute value, sku, tag, name), in bytes.
pub const MAX_REQUEST_STRING_LEN: usize = 4096;
/// `actionRefs` one redeem request may name.
pub const MAX_ACTION_REFS: usize = 100;

// Consent inputs (content `data`, the application-facing bodies and
// queries): a longer value is 422 `too_long` naming the field. PostgreSQL
// indexes `dataSubject`, `application` and the purpose catalogue's `code`
// in btrees whose rows hold at most 2,704 bytes (with the project id, the
// type and `seq`), so those limits stay far below that: every store takes
// every value the limits let through.

// Campaign identifiers that the stores index: PostgreSQL's btree rows hold
// at most 2,704 bytes, so every indexed value is bounded far below that,
// the same on every store.
/// Longest project id (the `{projId}` of every path; every service write),
/// in bytes.
pub const MAX_PROJECT_ID_LEN: usize = 128;
/// Longest `attribute.userId` of a search or redeem (a redemption's user,
/// indexed), in bytes.
pub const MAX_USER_ID_LEN: usize = 256;
/// Longest campaign `channel` and `groupName` (indexed for the campaign
/// list's filters), in bytes.
pub const MAX_CAMPAIGN_LABEL_LEN: usize = 256;
/// Longest quota key, as written in the campaign and as rendered for a
/// redeem (the key of the usage table), in bytes.
pub const MAX_QUOTA_KEY_LEN: usize = 512;

/// Refuses a project id longer than [`MAX_PROJECT_ID_LEN`]: 422
/// `validation_failed`, field `projId` (`too_long`).
pub fn check_project_id(project: &str) -> crate::Result<()> {
    if project.len() > MAX_PROJECT_ID_LEN {
        return Err(crate::Error::validation(vec![crate::FieldError::new(
            "projId",
            crate::core::error::ErrorCode::TooLong,
            format!("a project id is at most {MAX_PROJECT_ID_LEN} bytes long"),
        )]));
    }
    Ok(())
}

/// Longest `dataSubject`, in bytes.
pub const MAX_SUBJECT_LEN: usize = 256;
/// Longest application name (`app`, `application`, `consentApplication`), in bytes.
pub const MAX_APP_LEN: usize = 128;
/// Longest record reference (`consentId`, `privacyNoticeRef`,
/// `privacyNoticeId`, a content id in a path), in bytes. The service
/// chooses ids (UUIDs, 36 bytes).
pub const MAX_CONTENT_ID_LEN: usize = 128;
/// Longest purpose code (`purposes[i]`, `purposeCode`, the catalogue's `code`), in bytes.
pub const MAX_PURPOSE_CODE_LEN: usize = 128;
/// Longest `note` of an acceptance, in bytes.
pub const MAX_NOTE_LEN: usize = 4096;
/// Longest language tag of an acceptance (`language`), in bytes (RFC 5646
/// asks implementations to accept at least 35).
pub const MAX_LANGUAGE_TAG_LEN: usize = 35;
/// Longest device or context field of an acceptance (`userAgent`,
/// `country`, `localIp`, `osVersion`, `model`, `deviceFingerprintId`,
/// `device`), in bytes.
pub const MAX_DEVICE_FIELD_LEN: usize = 1024;
/// Longest short text of content (`name`, `nameEn`, `nameTh`, `ref1`–`ref3`), in bytes.
pub const MAX_CONTENT_NAME_LEN: usize = 1024;
/// Longest description of a notice or consent (`descriptionEn`, `descriptionTh`), in bytes.
pub const MAX_DESCRIPTION_LEN: usize = 65_536;
/// Attributes of one content record beyond its type's own (kept as sent).
pub const MAX_EXTRA_ATTRIBUTES: usize = 32;
/// Longest name of an attribute beyond the type's own, in bytes (the
/// longest name a list filter or sort key can use).
pub const MAX_ATTRIBUTE_NAME_LEN: usize = 64;
/// Longest value of an attribute beyond the type's own (and of
/// `formScreen`), as JSON text, in bytes.
pub const MAX_EXTRA_ATTRIBUTE_LEN: usize = 4096;
/// How far in the future a client-written `acceptanceDate` may lie (the
/// client's clock may run ahead of the server's), and how far before the
/// consent's revision came into force, in seconds.
pub const MAX_CLOCK_SKEW_SECONDS: i64 = 300;
/// `data.<attribute>` filters of one content-store list (400).
pub const MAX_FILTERS: usize = 20;
/// `sort` keys of one content-store list (400).
pub const MAX_SORT_KEYS: usize = 8;
/// Longest consent lifespan, in days (100 years; 422).
pub const MAX_LIFESPAN_DAYS: i64 = 36_500;
/// Purposes one consent or acceptance may list (422).
pub const MAX_PURPOSES: usize = 200;
/// Largest consent or privacy-notice revision number (422).
pub const MAX_REVISION: i64 = 1_000_000_000;

// The limits that live beside the code enforcing them, gathered here so
// this module is the one list.

/// Most values of an `in`/`not in` list (campaign field: 422).
pub use crate::core::condition::list::MAX_IN_VALUES;
/// Longest `matches` pattern, in bytes (campaign field: 422).
pub use crate::core::condition::MAX_PATTERN_LEN;
/// Longest condition value, in bytes (campaign field: 422).
pub use crate::core::condition::MAX_VALUE_LEN;
/// Deepest formula nesting (campaign field: 422 `formula_too_deep`).
pub use crate::core::formula::MAX_DEPTH as MAX_FORMULA_DEPTH;
/// Most nodes one formula evaluation visits (request: 413
/// `formula_budget_exceeded`; unreachable within [`MAX_FORMULA_LEN`], a
/// second line of defence).
pub use crate::core::formula::MAX_EVAL_STEPS;
/// Longest formula source, in bytes (campaign field: 422 `formula_too_long`).
pub use crate::core::formula::MAX_FORMULA_LEN;
/// Largest page of every list (content store, campaigns, redemptions): 400.
pub use crate::core::page::MAX_PAGE_SIZE;
/// Longest name inside `${…}`, in bytes.
pub use crate::core::template::MAX_NAME_LEN as MAX_TEMPLATE_NAME_LEN;
/// Longest `${name}` template (quota keys, benefit text), in bytes.
pub use crate::core::template::MAX_TEMPLATE_LEN;
