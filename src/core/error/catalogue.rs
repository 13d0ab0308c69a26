//! The error catalogue: every code Accord answers with, in one table.
//!
//! Each row gives a code its [`ErrorKind`] (and so its HTTP status, see
//! [`ErrorKind::status`]), a title (the problem's `title`), where it
//! appears (as a problem's `code`, in `errors[].code`, or both) and what it
//! means. `docs/errors.md` and the `code` enums of the OpenAPI document are
//! rendered from this table ([`markdown`]); a test compares the file with
//! the rendering, so adding a row means regenerating the file
//! (`ACCORD_BLESS=1 cargo test --all-features --lib error::catalogue`).

use std::fmt::{self, Write as _};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ErrorKind;

/// Where a code appears on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Appears {
    /// As the `code` of a problem (the error of a whole request).
    Problem,
    /// As the `code` of one entry of `errors` (a problem with one field).
    Field,
    /// In both places: a field problem reported alone, by its own code.
    Both,
}

impl Appears {
    /// Whether the code may be a problem's `code`.
    pub fn as_problem(self) -> bool {
        matches!(self, Appears::Problem | Appears::Both)
    }

    /// Whether the code may be a field error's `code`.
    pub fn as_field(self) -> bool {
        matches!(self, Appears::Field | Appears::Both)
    }
}

macro_rules! catalogue {
    ($( $variant:ident = $code:literal, $kind:ident, $appears:ident, $title:literal, $meaning:literal; )*) => {
        /// A stable error code. Clients match on its snake_case text
        /// ([`as_str`](Self::as_str)); the table of every code with its
        /// status is `docs/errors.md`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $( #[doc = concat!("`", $code, "`: ", $meaning)] $variant, )*
        }

        impl ErrorCode {
            /// Every code, in the catalogue's order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The snake_case text of the code, as sent on the wire.
            pub const fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $code,)* }
            }

            /// The class of failure, which fixes the HTTP status.
            pub const fn kind(self) -> ErrorKind {
                match self { $(ErrorCode::$variant => ErrorKind::$kind,)* }
            }

            /// Where the code appears on the wire.
            pub const fn appears(self) -> Appears {
                match self { $(ErrorCode::$variant => Appears::$appears,)* }
            }

            /// A short summary, the same for every occurrence: the
            /// problem's `title`.
            pub const fn title(self) -> &'static str {
                match self { $(ErrorCode::$variant => $title,)* }
            }

            /// What the code means, for the documentation.
            pub const fn meaning(self) -> &'static str {
                match self { $(ErrorCode::$variant => $meaning,)* }
            }

            /// The code's entry in the documentation, relative to `docs/`:
            /// `errors.md#quota_exceeded`.
            pub const fn docs_anchor(self) -> &'static str {
                match self { $(ErrorCode::$variant => concat!("errors.md#", $code),)* }
            }
        }
    };
}

catalogue! {
    // 400: the request is malformed.
    MalformedRequest = "malformed_request", BadRequest, Problem, "Malformed request",
        "The request is not valid HTTP/1.1; the server refuses it before any route sees it.";
    MalformedJson = "malformed_json", BadRequest, Problem, "Malformed JSON",
        "The body is not JSON: a syntax error, trailing characters or bad UTF-8.";
    InvalidJson = "invalid_json", BadRequest, Problem, "Wrong JSON shape",
        "The body is JSON of the wrong shape; `errors` names the field with the value of the wrong type.";
    InvalidType = "invalid_type", BadRequest, Field, "Wrong type",
        "A value of the wrong JSON type: a string where a number is needed, a number in a list of names.";
    BodyRequired = "body_required", BadRequest, Problem, "Body required",
        "The route needs a JSON body and got none.";
    UnreadableBody = "unreadable_body", BadRequest, Problem, "Unreadable body",
        "The body could not be read from the connection.";
    InvalidParameter = "invalid_parameter", BadRequest, Both, "Invalid parameter",
        "A query, path or header parameter is malformed, missing or given twice; `errors` names it.";
    InvalidIfMatch = "invalid_if_match", BadRequest, Problem, "Invalid If-Match",
        "The `If-Match` header is not one entity tag of a version number.";
    InvalidQuery = "invalid_query", BadRequest, Problem, "Invalid query",
        "A list query is malformed in more than one way; `errors` lists each problem.";
    InvalidFilter = "invalid_filter", BadRequest, Both, "Invalid filter",
        "A content list filter is malformed or names an unknown attribute or operator.";
    InvalidPage = "invalid_page", BadRequest, Both, "Invalid page",
        "The page number is not a whole number from 0.";
    InvalidPageSize = "invalid_page_size", BadRequest, Both, "Invalid page size",
        "The page size is not a whole number within its bounds.";
    InvalidSort = "invalid_sort", BadRequest, Both, "Invalid sort",
        "A sort key is malformed or names an attribute that cannot be sorted on.";
    UnknownParameter = "unknown_parameter", BadRequest, Both, "Unknown parameter",
        "A query parameter the route does not know.";
    DuplicateParameter = "duplicate_parameter", BadRequest, Both, "Duplicate parameter",
        "A query parameter given more than once.";
    TooManyFilters = "too_many_filters", BadRequest, Both, "Too many filters",
        "A list query with more filters than allowed.";
    TooManySortKeys = "too_many_sort_keys", BadRequest, Both, "Too many sort keys",
        "A list query with more sort keys than allowed.";
    InvalidReceiptKey = "invalid_receipt_key", BadRequest, Problem, "Invalid receipt key",
        "A configured receipt signing key (an Ed25519 seed) or retired public key that is not 32 bytes.";
    ImportNotSupported = "import_not_supported", BadRequest, Problem, "Import not supported",
        "An import of records that are not imported (consent acceptances stay where they were recorded).";
    InvalidContentId = "invalid_content_id", BadRequest, Problem, "Invalid content id",
        "A content id of an import that is empty or longer than its limit.";

    // 401, 403: credentials.
    Unauthorized = "unauthorized", Unauthorized, Problem, "Unauthorized",
        "No bearer token was sent (`WWW-Authenticate: Bearer`).";
    InvalidToken = "invalid_token", Unauthorized, Problem, "Invalid token",
        "The token is malformed, badly signed, expired, without `exp`, or signed with an unknown key.";
    ProjectForbidden = "project_forbidden", Forbidden, Problem, "Project forbidden",
        "The path's project is not in the token's `projects` claim.";
    InsufficientScope = "insufficient_scope", Forbidden, Problem, "Insufficient scope",
        "The token lacks a scope the route needs; `WWW-Authenticate` names it.";

    // 404: no such thing.
    RouteNotFound = "route_not_found", NotFound, Problem, "Route not found",
        "No route has this path.";
    CampaignNotFound = "campaign_not_found", NotFound, Problem, "Campaign not found",
        "No campaign with this id in the project.";
    HoldNotFound = "hold_not_found", NotFound, Problem, "Hold not found",
        "No quota hold with this id in the project.";
    CampaignRevisionNotFound = "campaign_revision_not_found", NotFound, Problem, "Campaign revision not found",
        "The campaign has no revision with this number.";
    RedemptionNotFound = "redemption_not_found", NotFound, Problem, "Redemption not found",
        "No redemption with this id in the project.";
    ContentNotFound = "content_not_found", NotFound, Problem, "Content not found",
        "No content record (or version of it) with this id in the project.";
    ContentTypeNotFound = "content_type_not_found", NotFound, Problem, "Content type not found",
        "The path names a content type the store does not have.";
    ConsentNotFound = "consent_not_found", NotFound, Problem, "Consent not found",
        "No consent with this id in the project.";
    PrivacyNoticeNotFound = "privacy_notice_not_found", NotFound, Problem, "Privacy notice not found",
        "No privacy notice with this id in the project.";
    PurposeNotFound = "purpose_not_found", NotFound, Problem, "Purpose not found",
        "No purpose with this code in the project.";
    ReceiptNotFound = "receipt_not_found", NotFound, Problem, "Receipt not found",
        "No consent receipt with this id in the project.";
    FileNotFound = "file_not_found", NotFound, Problem, "File not found",
        "No file with this SHA-256 was uploaded to the project.";
    CodeNotFound = "code_not_found", NotFound, Problem, "Code not found",
        "No code of a campaign's code pool matches (case, spaces and dashes aside).";
    WebhookNotFound = "webhook_not_found", NotFound, Problem, "Webhook not found",
        "No webhook endpoint with this id in the project.";
    DeliveryNotFound = "delivery_not_found", NotFound, Problem, "Delivery not found",
        "The webhook endpoint has no delivery of an event with this id.";

    // 405, 408, 414, 415, 429, 431: the HTTP layer.
    MethodNotAllowed = "method_not_allowed", MethodNotAllowed, Problem, "Method not allowed",
        "The path exists, the method does not; `Allow` lists the methods.";
    HeadTimeout = "head_timeout", Timeout, Problem, "Request head timeout",
        "The request head did not arrive within its timeout; the connection closes.";
    BodyTimeout = "body_timeout", Timeout, Problem, "Request body timeout",
        "The request body did not arrive within its timeout; the connection closes.";
    UriTooLong = "uri_too_long", UriTooLong, Problem, "URI too long",
        "The request target (path and query) is longer than its limit.";
    UnsupportedMediaType = "unsupported_media_type", UnsupportedMediaType, Problem, "Unsupported media type",
        "A body sent without `Content-Type: application/json`.";
    RateLimited = "rate_limited", RateLimited, Problem, "Rate limited",
        "Too many requests for the project or the token; `Retry-After` says when to retry.";
    HeaderFieldsTooLarge = "header_fields_too_large", HeaderFieldsTooLarge, Problem, "Request header fields too large",
        "The request head has too many header fields or is too long.";

    // 409: the request conflicts with the current state.
    QuotaExceeded = "quota_exceeded", Conflict, Problem, "Quota exceeded",
        "A quota of the redeem would go over its limit; nothing was recorded.";
    HoldExpired = "hold_expired", Conflict, Problem, "Hold expired",
        "A quota hold is confirmed after its expiry: its quota was returned; place a new hold or redeem.";
    HoldReleased = "hold_released", Conflict, Problem, "Hold released",
        "A quota hold is confirmed after it was released.";
    StackingConflict = "stacking_conflict", Conflict, Problem, "Stacking conflict",
        "Campaigns redeemed for the same order (`withCampaigns`) may not be applied together.";
    TooManyWebhooks = "too_many_webhooks", Conflict, Problem, "Too many webhooks",
        "The project has as many webhook endpoints as allowed; delete one first.";
    StaleVersion = "stale_version", Conflict, Problem, "Stale version",
        "The record changed since the version the request names (`version`, `If-Match`).";
    DuplicateRefCode = "duplicate_ref_code", Conflict, Both, "Duplicate refCode",
        "Another campaign of the project has this `refCode`.";
    DuplicateId = "duplicate_id", Conflict, Problem, "Duplicate id",
        "A campaign with this id already exists.";
    DuplicateContentId = "duplicate_content_id", Conflict, Problem, "Duplicate content id",
        "A content record of this type with this id already exists.";
    DuplicateEventId = "duplicate_event_id", Conflict, Problem, "Duplicate event id",
        "A purpose event with this id already exists.";
    ReceiptsNotConfigured = "receipts_not_configured", Conflict, Problem, "Receipts not configured",
        "Consent receipts need a signing key, and the server has none.";
    ErasureNotConfigured = "erasure_not_configured", Conflict, Problem, "Erasure not configured",
        "Erasure needs a pseudonym key, and the server has none.";
    CodeInactive = "code_inactive", Conflict, Problem, "Code inactive",
        "The code was deactivated; nothing was recorded.";
    CodeExhausted = "code_exhausted", Conflict, Problem, "Code used up",
        "The code was used as many times as its usage limit allows; nothing was recorded.";
    DuplicateCode = "duplicate_code", Conflict, Both, "Duplicate code",
        "A code of an import is already in the project (or twice in the file), case, spaces and dashes aside.";
    CodeSpaceExhausted = "code_space_exhausted", Conflict, Problem, "Code space exhausted",
        "Generating codes met taken codes too often (earlier codes fill the space of this length and affixes); nothing was stored.";
    RetentionNotConfigured = "retention_not_configured", Conflict, Problem, "Retention not configured",
        "A purge needs a retention period in the server's configuration, and the server has none.";

    // 413: a size or work budget.
    PayloadTooLarge = "payload_too_large", LimitExceeded, Problem, "Payload too large",
        "The request body is over its size limit.";
    RequestTooLarge = "request_too_large", LimitExceeded, Problem, "Request too large",
        "A request over a size limit: too many cart items, attributes or campaigns to apply.";
    TooManyCampaigns = "too_many_campaigns", LimitExceeded, Problem, "Too many campaigns",
        "The project holds as many campaigns as it may.";
    FormulaTooLong = "formula_too_long", LimitExceeded, Both, "Formula too long",
        "A formula longer than its limit.";
    FormulaTooDeep = "formula_too_deep", LimitExceeded, Both, "Formula too deep",
        "A formula nesting parentheses, calls or signs deeper than its limit.";
    FormulaBudgetExceeded = "formula_budget_exceeded", LimitExceeded, Both, "Formula budget exceeded",
        "Evaluating a formula took more steps than its budget.";
    TemplateTooLong = "template_too_long", LimitExceeded, Both, "Template too long",
        "A `${name}` template longer than its limit.";

    // 422: the request is well-formed but breaks a rule.
    ValidationFailed = "validation_failed", Validation, Problem, "Validation failed",
        "The input breaks one or more rules; `errors` lists every problem with its field path.";
    Required = "required", Validation, Field, "Required",
        "A field is missing, `null`, blank, or an empty list where one item is needed.";
    Invalid = "invalid", Validation, Field, "Invalid",
        "A value outside what the field accepts (the message says what it accepts).";
    InvalidEnum = "invalid_enum", Validation, Field, "Invalid value",
        "A value outside the field's set of names (a status, an operator, a type).";
    InvalidNumber = "invalid_number", Validation, Field, "Invalid number",
        "Not a decimal number, or one beyond the 28 digits a decimal holds.";
    InvalidTimestamp = "invalid_timestamp", Validation, Field, "Invalid timestamp",
        "Not an RFC 3339 timestamp (`2026-01-01T00:00:00+07:00`).";
    InvalidRegex = "invalid_regex", Validation, Field, "Invalid regular expression",
        "A pattern that does not compile, or compiles too large.";
    TooLong = "too_long", Validation, Field, "Too long",
        "A text over its length limit (`docs/limits.md`).";
    TooMany = "too_many", Validation, Field, "Too many",
        "A list with more items than its limit.";
    EvidenceMismatch = "evidence_mismatch", Validation, Field, "Evidence mismatch",
        "An evidence field of an acceptance that differs from what the server derives.";
    UnknownFile = "unknown_file", Validation, Both, "Unknown file",
        "A `formScreen` that is not the SHA-256 of a file uploaded to the project.";
    FileTypeMismatch = "file_type_mismatch", Validation, Problem, "File type mismatch",
        "The uploaded bytes are not of the type the `Content-Type` names (or of none of the accepted types).";
    InvalidJwtKey = "invalid_jwt_key", Validation, Problem, "Invalid JWT key",
        "A configured token verification key that cannot be used.";
    InvalidIdempotencyKey = "invalid_idempotency_key", Validation, Both, "Invalid idempotency key",
        "An idempotency key that is empty, longer than 128 bytes, or not visible ASCII.";
    ConsentNotInApp = "consent_not_in_app", Validation, Both, "Consent not in application",
        "The consent does not belong to the application of the route.";
    UnknownCampaign = "unknown_campaign", Validation, Both, "Unknown campaign",
        "`withCampaigns` names a campaign the project does not have.";
    CodeRequired = "code_required", Validation, Both, "Code required",
        "The campaign has a code pool: a redeem of it must carry one of its codes (`code`).";
    CodeNotForCampaign = "code_not_for_campaign", Validation, Both, "Code of another campaign",
        "The code belongs to another campaign than `campaignCode` names.";
    InvalidCode = "invalid_code", Validation, Field, "Invalid code",
        "A code, prefix or suffix with a character outside A-Z a-z 0-9 - _.";
    CodeSpaceTooSmall = "code_space_too_small", Validation, Field, "Code space too small",
        "The alphabet and length give fewer than 1000 times the codes asked for; make the codes longer.";
    NoActionSelected = "no_action_selected", Validation, Both, "No action selected",
        "`actionRefs` selects none of the campaign's actions.";
    InvalidQuotaAmount = "invalid_quota_amount", Validation, Both, "Invalid quota amount",
        "A quota's amount (`value` or `valueField`) is not a positive decimal for this request.";
    QuotaKeyUnresolved = "quota_key_unresolved", Validation, Both, "Quota key unresolved",
        "A quota key's template names a value the request does not have.";
    QuotaKeyTooLong = "quota_key_too_long", Validation, Both, "Quota key too long",
        "A quota key, once rendered for this request, is longer than its limit.";
    InvalidBenefitAmount = "invalid_benefit_amount", Validation, Both, "Invalid benefit amount",
        "A benefit's amount is not a decimal for this request (a formula's result, a cap).";
    ItemPriceUnknown = "item_price_unknown", Validation, Both, "Item price unknown",
        "A benefit allocated to cart lines needs a line's price, and the request has none.";
    CartTotalUnknown = "cart_total_unknown", Validation, Both, "Cart total unknown",
        "A percentage benefit of the cart needs its total, and the request has none.";
    CurrencyUnknown = "currency_unknown", Validation, Both, "Currency unknown",
        "The cart's currency is not an ISO 4217 code Accord knows the minor unit of.";
    AllocationOverflow = "allocation_overflow", Validation, Both, "Allocation overflow",
        "Allocating a benefit to cart lines went beyond a decimal's range.";
    FormulaSyntax = "formula_syntax", Validation, Both, "Formula syntax",
        "A formula that does not parse; the message draws a caret under the fault.";
    FormulaUnknownName = "formula_unknown_name", Validation, Both, "Formula name unknown",
        "A formula's `${name}` has no value in the request.";
    FormulaNotANumber = "formula_not_a_number", Validation, Both, "Formula value not a number",
        "A formula's `${name}` has a value that is not a number.";
    FormulaDivisionByZero = "formula_division_by_zero", Validation, Both, "Formula division by zero",
        "A formula divides by zero (`/` or `%`).";
    FormulaOverflow = "formula_overflow", Validation, Both, "Formula overflow",
        "A formula's result is beyond a decimal's range.";
    TemplateSyntax = "template_syntax", Validation, Both, "Template syntax",
        "A `${name}` template that is unterminated or names an invalid name.";
    TemplateUnresolved = "template_unresolved", Validation, Both, "Template unresolved",
        "A template names a value the request does not have.";

    IdempotencyKeyReused = "idempotency_key_reused", Validation, Both, "Idempotency key reused",
        "The idempotency key was used for another request; use a new key for another redemption.";
    CampaignNotActive = "campaign_not_active", Validation, Problem, "Campaign not active",
        "The campaign is not running at the time of the redeem (draft, paused, not started or ended).";
    ChannelMismatch = "channel_mismatch", Validation, Problem, "Channel mismatch",
        "The campaign runs on another channel than the request's.";
    ConditionsNotMet = "conditions_not_met", Validation, Problem, "Conditions not met",
        "The request does not meet the campaign's conditions; the message says which one failed.";
    NoRules = "no_rules", Validation, Field, "No rules",
        "Under `conditions_not_met`: the campaign has no rules.";
    RuleNotValidNow = "rule_not_valid_now", Validation, Field, "Rule not valid now",
        "Under `conditions_not_met`: no rule of the campaign is valid at this time.";
    ConditionFailed = "condition_failed", Validation, Field, "Condition failed",
        "Under `conditions_not_met`: a condition of a rule does not hold for the request; the field names it.";
    NoRuleFired = "no_rule_fired", Validation, Field, "No rule fired",
        "Under `conditions_not_met`: no rule produced an action.";
    ActionChoiceRequired = "action_choice_required", Validation, Problem, "Action choice required",
        "A rule offers a choice of benefits (an OR rule); `actionRefs` must choose.";
    UnknownActionRef = "unknown_action_ref", Validation, Both, "Unknown actionRef",
        "`actionRefs` names an action the campaign does not have.";
    InvalidText = "invalid_text", Validation, Both, "Invalid text",
        "A text with a character it may not hold (the NUL character).";
    Duplicate = "duplicate", Validation, Field, "Duplicate",
        "An item listed twice where each must be unique (a rule id, an actionRef, a purpose code).";
    OutOfRange = "out_of_range", Validation, Field, "Out of range",
        "A number outside its range (revision 0, lifespan over 100 years).";
    Inconsistent = "inconsistent", Validation, Field, "Inconsistent",
        "Fields that contradict each other (an `ACCEPTED` acceptance with a `withdrawalDate`).";
    InvalidAttribute = "invalid_attribute", Validation, Field, "Invalid attribute",
        "A condition's attribute is not a valid name.";
    UnknownAttribute = "unknown_attribute", Validation, Field, "Unknown attribute",
        "A name that is not an attribute of the request or of the benefit.";
    InvalidCapScope = "invalid_cap_scope", Validation, Field, "Invalid cap scope",
        "A benefit cap's scope is not one the benefit allows.";
    InvalidPeriod = "invalid_period", Validation, Field, "Invalid period",
        "A period whose end is not after its start, or a quota period outside its set.";
    InvalidPriority = "invalid_priority", Validation, Field, "Invalid priority",
        "A priority that is not a whole number within its range.";
    InvalidRefCode = "invalid_ref_code", Validation, Field, "Invalid refCode",
        "A `refCode` with characters outside A-Z a-z 0-9 _ . -.";
    InvalidHoldTtl = "invalid_hold_ttl", Validation, Both, "Invalid hold ttl",
        "A hold's `ttl` that is not a whole number of seconds from 1 to the limit (`docs/quotas.md`).";
    InvalidTimeZone = "invalid_time_zone", Validation, Field, "Invalid time zone",
        "Not an IANA time zone name (`Asia/Bangkok`).";
    InvalidQuotaWindow = "invalid_quota_window", Validation, Field, "Invalid quota window",
        "A quota `window` that is not a duration of 1 second to 366 days in ISO 8601 form (`PT24H`, `P7D`).";
    QuotaKeyAmbiguous = "quota_key_ambiguous", Validation, Field, "Quota key ambiguous",
        "A quota key template with placeholders side by side, which could render two values as one key.";
    InListSyntax = "in_list_syntax", Validation, Field, "in list syntax",
        "The value of an `in` or `not_in` condition is not a list `(\"a\",\"b\")`; `span` points at the fault.";
    InListTooLong = "in_list_too_long", Validation, Field, "in list too long",
        "An `in` list with more items than its limit.";
    UnknownPrivacyNotice = "unknown_privacy_notice", Validation, Field, "Unknown privacy notice",
        "A consent names a privacy notice the project does not have.";
    UnknownConsent = "unknown_consent", Validation, Field, "Unknown consent",
        "An acceptance names a consent the project does not have.";
    UnknownPurpose = "unknown_purpose", Validation, Field, "Unknown purpose",
        "A purpose code the project's catalogue or the consent does not have.";
    ConsentNotPublished = "consent_not_published", Validation, Both, "Consent not published",
        "The consent is not `PUBLISHED`, so it cannot be accepted.";
    PrivacyNoticeNotPublished = "privacy_notice_not_published", Validation, Both, "Privacy notice not published",
        "The consent's privacy notice is missing or not `PUBLISHED`, so the consent is not offered.";
    InvalidTransition = "invalid_transition", Validation, Field, "Invalid transition",
        "A status change the record's life does not allow (an acceptance only moves from ACCEPTED to WITHDRAWN).";
    Immutable = "immutable", Validation, Field, "Immutable",
        "A field that may not change once written (an acceptance's evidence).";
    InFuture = "in_future", Validation, Field, "In the future",
        "A timestamp later than now, beyond the allowed clock skew.";
    BeforeRevision = "before_revision", Validation, Field, "Before the revision",
        "A timestamp earlier than the revision it refers to.";
    RevisionDecreased = "revision_decreased", Validation, Field, "Revision decreased",
        "A revision lower than the record's current one; revisions only increase.";
    RevisionRequired = "revision_required", Validation, Field, "New revision required",
        "A change that needs a new revision (a consent's purposes) made without one.";
    EvidenceMissing = "evidence_missing", Validation, Field, "Evidence missing",
        "A stored acceptance lacks an evidence field (reported by the consent check).";
    InvalidCorsOrigin = "invalid_cors_origin", Validation, Problem, "Invalid CORS origin",
        "A configured CORS origin that is neither `https://host[:port]` nor `*`.";

    // 500, 503.
    Internal = "internal", Internal, Problem, "Internal error",
        "A bug; the details are logged, never sent.";
    StoreUnavailable = "store_unavailable", Unavailable, Problem, "Store unavailable",
        "The store cannot be reached; retry after `Retry-After` seconds.";
    StoreTimeout = "store_timeout", Unavailable, Problem, "Store timeout",
        "The store did not answer in time. A write may still complete: retry a redeem with its idempotency key, read before repeating other writes.";
    WriteContention = "write_contention", Unavailable, Problem, "Write contention",
        "Too many concurrent writes to the same record; retry.";
    TooManyConnections = "too_many_connections", Unavailable, Problem, "Too many connections",
        "The server holds as many connections as it may; retry later.";
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text is not a code of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown error code `{0}`")]
pub struct UnknownCode(pub String);

impl FromStr for ErrorCode {
    type Err = UnknownCode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ErrorCode::ALL
            .iter()
            .copied()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownCode(s.to_owned()))
    }
}

impl PartialEq<str> for ErrorCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<ErrorCode> for &str {
    fn eq(&self, other: &ErrorCode) -> bool {
        *self == other.as_str()
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// `docs/errors.md`, rendered from the catalogue.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Errors\n\n\
         <!-- Generated from src/core/error/catalogue.rs; do not edit by hand. A test\n\
         compares this file with the catalogue; after changing the catalogue run\n\
         `ACCORD_BLESS=1 cargo test --all-features --lib error::catalogue` to rewrite it. -->\n\n\
         Every error response is RFC 9457 `application/problem+json`:\n\n\
         ```json\n\
         {\"type\": \"urn:accord:problem:validation_failed\", \"title\": \"Validation failed\", \"status\": 422,\n \
         \"detail\": \"the input is invalid: name: name is required (required)\",\n \
         \"code\": \"validation_failed\",\n \
         \"errors\": [{\"field\": \"name\", \"code\": \"required\", \"message\": \"name is required\"}]}\n\
         ```\n\n\
         `code` is stable: match on it, not on `detail` or `message`, whose wording\n\
         may improve. `type` is `urn:accord:problem:` followed by the code, and\n\
         `title` is the code's title below, the same for every occurrence.\n\
         `errors` lists every problem with a field of the input, each with the\n\
         field's JSON path, a code of the second table and, where the problem is\n\
         in a piece of text (a formula, an `in` list, a template), `span`: the\n\
         byte range `{\"start\": 4, \"end\": 7}` of the offending text within the\n\
         field's value. Embedding programs get the same codes from\n\
         `accord::Error::error_code` and `accord::FieldError::code`.\n\n\
         ## Problem codes\n\n\
         The `code` of a whole response, with its HTTP status.\n\n\
         | Code | Status | Title | Meaning |\n|---|---|---|---|\n",
    );
    let mut problems: Vec<ErrorCode> = ErrorCode::ALL
        .iter()
        .copied()
        .filter(|c| c.appears().as_problem())
        .collect();
    problems.sort_by_key(|c| (c.kind().status(), c.as_str()));
    for c in problems {
        let _ = writeln!(
            out,
            "| <a id=\"{code}\"></a>`{code}` | {status} | {title} | {meaning} |",
            code = c.as_str(),
            status = c.kind().status(),
            title = c.title(),
            meaning = c.meaning(),
        );
    }
    out.push_str(
        "\n## Field codes\n\n\
         The `code` of an entry of `errors`. A code that is also a problem code\n\
         is answered alone, with its status above, when it is the only problem\n\
         with a request evaluated against saved campaigns (a quota key that\n\
         cannot be rendered for this request); saving a campaign or content\n\
         reports every problem together under `validation_failed`.\n\n\
         | Code | Title | Meaning |\n|---|---|---|\n",
    );
    let mut fields: Vec<ErrorCode> = ErrorCode::ALL
        .iter()
        .copied()
        .filter(|c| c.appears().as_field())
        .collect();
    fields.sort_by_key(|c| c.as_str());
    for c in fields {
        let anchor = if c.appears().as_problem() {
            format!("[`{0}`](#{0})", c.as_str())
        } else {
            format!("<a id=\"{0}\"></a>`{0}`", c.as_str())
        };
        let _ = writeln!(
            out,
            "| {anchor} | {title} | {meaning} |",
            title = c.title(),
            meaning = c.meaning(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for &c in ErrorCode::ALL {
            let s = c.as_str();
            assert!(seen.insert(s), "{s} twice");
            assert!(
                s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{s} is not snake_case"
            );
            assert_eq!(s.parse::<ErrorCode>(), Ok(c));
            assert_eq!(serde_json::to_value(c).unwrap(), s);
            assert!(!c.title().is_empty() && c.meaning().ends_with('.'), "{s}");
        }
        assert!("no_such_code".parse::<ErrorCode>().is_err());
    }

    #[test]
    fn docs_errors_md_is_rendered_from_the_catalogue() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/errors.md");
        let rendered = markdown();
        if std::env::var_os("ACCORD_BLESS").is_some() {
            std::fs::write(path, &rendered).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == rendered,
            "docs/errors.md is not the catalogue's rendering; run \
             ACCORD_BLESS=1 cargo test --all-features --lib error::catalogue"
        );
    }
}
