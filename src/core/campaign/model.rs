//! Campaign domain types, with the wire names of the campaign specification.
//!
//! Two shapes exist for a campaign: [`CampaignInput`], what a client sends to
//! create or update one (server-managed fields such as `id`, `version` and
//! `active` are ignored if present, so a client may send back what it read),
//! and [`Campaign`], the stored record.
//!
//! Enumerations that a client writes (`op`, `type`, `valueType`, `match`,
//! `thenOperator`, `status`) keep unknown values as `Unknown(text)`: a
//! campaign with five bad values gets five field errors from
//! [`validate`](super::validate), not one serde error.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

pub use super::promotion::{
    AllocateMethod, BenefitCap, CapScope, Capped, CappedBy, LineShare, Stacking,
    DEFAULT_AMOUNT_ATTRIBUTE,
};
use super::schedule::StatusChange;
use super::window::QuotaWindow;
use crate::core::wire::{self, Scalar};
use crate::string_enum;

string_enum! {
    /// Whether a campaign runs.
    #[derive(Default)]
    pub enum CampaignStatus {
        /// The campaign runs during its period.
        #[default]
        Enable = "ENABLE",
        /// The campaign never runs.
        Disable = "DISABLE",
    }
}

string_enum! {
    /// How the conditions of a `when` group combine.
    #[derive(Default)]
    pub enum MatchKind {
        /// Every condition must hold (the spec's value).
        #[default]
        All = "ALL",
        /// At least one condition must hold.
        Any = "ANY",
    }
}

string_enum! {
    /// What a condition's `attribute` names.
    pub enum ConditionType {
        /// `totalPrice` or `currency` of the cart.
        Cart = "cart",
        /// `sku`, `amount`, `price` or `tags` of a cart item.
        CartItem = "cartItem",
        /// Any name of the request's `attribute` object.
        Custom = "custom",
    }
}

string_enum! {
    /// The comparison of a condition.
    pub enum Op {
        /// Input equals the value.
        Eq = "eq",
        /// Input does not equal the value.
        Neq = "neq",
        /// Input greater than the value.
        Gt = "gt",
        /// Input greater than or equal to the value.
        Gte = "gte",
        /// Input less than the value.
        Lt = "lt",
        /// Input less than or equal to the value.
        Lte = "lte",
        /// Input is one of `("a","b",…)`.
        In = "in",
        /// Input is none of `("a","b",…)`.
        NotIn = "not_in",
        /// Input matches the regex as a whole.
        Matches = "matches",
        /// Input does not match the regex as a whole.
        NotMatches = "not_matches",
        /// The collection input contains the value.
        Contains = "contains",
        /// The collection input does not contain the value.
        NotContains = "not_contains",
    }
}

string_enum! {
    /// How a condition's value and input compare.
    #[derive(Default)]
    pub enum ValueType {
        /// As strings (ordering ops are lexicographic).
        #[default]
        String = "STRING",
        /// As decimals.
        Number = "NUMBER",
    }
}

string_enum! {
    /// How the benefits of a rule combine at redeem.
    #[derive(Default)]
    pub enum ThenOperator {
        /// Every benefit applies.
        #[default]
        And = "AND",
        /// The client chooses among the benefits.
        Or = "OR",
    }
}

/// One condition of a `when` group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `cart`, `cartItem` or `custom`.
    #[serde(rename = "type")]
    pub kind: ConditionType,
    /// Name of the attribute compared.
    #[serde(default)]
    pub attribute: String,
    /// The comparison.
    pub op: Op,
    /// The criterion value; for `in`/`not_in` a list `("a","b")`.
    #[serde(default, deserialize_with = "wire::string_or_scalar")]
    pub value: String,
    /// `STRING` (default) or `NUMBER`.
    #[serde(default)]
    pub value_type: ValueType,
    /// Free note.
    #[serde(default)]
    pub note: Option<String>,
    /// Stored and returned unchanged; it does not affect evaluation.
    #[serde(default)]
    pub resolve_action: bool,
}

/// A group of conditions; a rule fires when every group of it is satisfied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
pub struct WhenGroup {
    /// `ALL` (default) or `ANY`.
    #[serde(rename = "match", default)]
    pub match_kind: MatchKind,
    /// The conditions of the group.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// One attribute of a benefit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DataItem {
    /// Name of the benefit attribute (`amount`, `sku`, `grade`, …).
    pub attribute: String,
    /// The value: text with `${name}` placeholders, or a formula when
    /// [`is_formula`](Self::is_formula) is set.
    #[serde(default, deserialize_with = "wire::string_or_scalar")]
    pub value: String,
    /// `null` or `custom`; returned unchanged.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Returned unchanged.
    #[serde(default)]
    pub op: Option<String>,
    /// Returned unchanged (`STRING` in the spec's examples).
    #[serde(default)]
    pub value_type: Option<String>,
    /// Returned unchanged.
    #[serde(default)]
    pub note: Option<String>,
    /// Returned unchanged.
    #[serde(default)]
    pub resolve_action: bool,
    /// The value is an arithmetic formula to evaluate (the administrative
    /// interface's "Is Formular").
    #[serde(default)]
    pub is_formula: bool,
}

impl DataItem {
    /// A plain text data item.
    pub fn text(attribute: &str, value: &str) -> Self {
        DataItem {
            attribute: attribute.to_owned(),
            value: value.to_owned(),
            kind: None,
            op: None,
            value_type: Some("STRING".to_owned()),
            note: None,
            resolve_action: false,
            is_formula: false,
        }
    }

    /// A formula data item.
    pub fn formula(attribute: &str, formula: &str) -> Self {
        DataItem {
            is_formula: true,
            ..DataItem::text(attribute, formula)
        }
    }
}

/// A benefit of a rule.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Then {
    /// `DISCOUNT`, `FREE_GIFT`, `CART_DISCOUNT`, … or `null` (grading).
    #[serde(default)]
    pub action: Option<String>,
    /// Returned unchanged.
    #[serde(default)]
    pub internal_action: bool,
    /// Identifies the benefit, to select it at redeem. A UUID is generated
    /// when a campaign is saved without one.
    #[serde(default)]
    pub action_ref: String,
    /// The benefit's attributes.
    #[serde(default)]
    pub data: Vec<DataItem>,
    /// Bounds on the benefit's amount (optional; see
    /// [`BenefitCap`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<BenefitCap>,
    /// Spread the benefit's amount over the cart's lines (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocate: Option<AllocateMethod>,
    /// Output of search and redeem: each cart line's share of an allocated
    /// benefit, in cart order. Ignored in a campaign.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation: Option<Vec<LineShare>>,
    /// Output of search and redeem: set when a cap or an allocation reduced
    /// the amount. Ignored in a campaign.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capped: Option<Capped>,
}

/// A promotion rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    /// Rule id; a UUID is generated when a campaign is saved without one.
    #[serde(default)]
    pub id: String,
    /// Name of the rule.
    #[serde(default)]
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Condition groups; all must be satisfied.
    #[serde(default)]
    pub when: Vec<WhenGroup>,
    /// `AND` (default) or `OR`.
    #[serde(default)]
    pub then_operator: ThenOperator,
    /// The benefits.
    #[serde(default)]
    pub then: Vec<Then>,
    /// The rule applies from this instant (inclusive) when set.
    #[serde(default)]
    pub valid_from: Option<DateTime<Utc>>,
    /// The rule applies until this instant (exclusive) when set.
    #[serde(default)]
    pub valid_to: Option<DateTime<Utc>>,
}

/// A limit on the redemptions carrying a key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Quota {
    /// Quota id (optional).
    #[serde(default)]
    pub id: Option<String>,
    /// The key, with `${name}` placeholders (`${campaignCode}-${userId}`).
    #[serde(default)]
    pub key: String,
    /// The limit on the count (or on the sum of `valueField`): a JSON
    /// number whose text is the exact decimal.
    #[serde(with = "wire::decimal_number")]
    #[cfg_attr(feature = "http", schema(value_type = f64))]
    pub value: Decimal,
    /// The request or benefit attribute to sum; empty or absent: count.
    #[serde(default)]
    pub value_field: Option<String>,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// A rolling window (`PT24H`, `P7D`): the limit holds in any window of
    /// this duration ending now, instead of over all time. Absent: a
    /// calendar quota (docs/quotas.md, "Rolling windows"). Saved in
    /// canonical form (`PT24H` as `P1D`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "http", schema(example = "PT24H"))]
    pub window: Option<String>,
}

/// What a client sends to create or update a campaign.
///
/// Required fields are `Option`/empty-defaulted so that a missing one is
/// reported by validation, with every other problem, rather than by serde.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CampaignInput {
    /// Marketing name (required).
    #[serde(default)]
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Marketing image address.
    #[serde(default)]
    pub image_url: Option<String>,
    /// Start of the running period, inclusive (required).
    #[serde(default)]
    pub start_date: Option<DateTime<Utc>>,
    /// End of the running period, exclusive (required, after `startDate`).
    #[serde(default)]
    pub end_date: Option<DateTime<Utc>>,
    /// Reference code, unique in the project (required).
    #[serde(default)]
    pub ref_code: String,
    /// `ENABLE` (default) or `DISABLE`.
    #[serde(default)]
    pub status: CampaignStatus,
    /// 1 is the highest and the default.
    #[serde(default)]
    pub priority: Option<i32>,
    /// When set, the campaign only runs for requests of this channel.
    #[serde(default)]
    pub channel: Option<String>,
    /// Free grouping label, searchable in the campaign list.
    #[serde(default)]
    pub group_name: Option<String>,
    /// How the campaign combines with others (optional; absent: it stacks
    /// with every other).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacking: Option<Stacking>,
    /// IANA time zone of the calendar names of quota keys and benefits
    /// (`${day}`, `${month}`, `${year}`, `${week}`); absent: the project's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Scheduled status changes: from each change's `at` on, its `status`
    /// is in force instead of `status` (until the next change). At most 50.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status_schedule: Vec<StatusChange>,
    /// Quotas.
    #[serde(default)]
    pub quotas: Vec<Quota>,
    /// Rules.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// On update: the version the client last read. A stale version is a
    /// conflict; absent means "no check".
    #[serde(default)]
    pub version: Option<i64>,
}

/// A stored campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Campaign {
    /// Campaign id.
    pub id: Uuid,
    /// Marketing name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Marketing image address.
    pub image_url: Option<String>,
    /// Start of the running period, inclusive.
    pub start_date: DateTime<Utc>,
    /// End of the running period, exclusive.
    pub end_date: DateTime<Utc>,
    /// Reference code, unique in the project.
    pub ref_code: String,
    /// `ENABLE` or `DISABLE`.
    pub status: CampaignStatus,
    /// 1 is the highest.
    pub priority: i32,
    /// When set, the campaign only runs for requests of this channel.
    pub channel: Option<String>,
    /// Free grouping label.
    #[serde(default)]
    pub group_name: Option<String>,
    /// How the campaign combines with others; absent: it stacks with every
    /// other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacking: Option<Stacking>,
    /// IANA time zone of the calendar names; absent: the project's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Scheduled status changes, sorted by `at`: from each change's `at`
    /// on, its `status` is in force instead of `status`. Absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status_schedule: Vec<StatusChange>,
    /// Quotas.
    pub quotas: Vec<Quota>,
    /// Rules.
    pub rules: Vec<Rule>,
    /// Project the campaign belongs to.
    pub project_id: String,
    /// Revision counter: 1 on creation, +1 on every update.
    pub version: i64,
    /// Whether the campaign runs at the time of the response
    /// (`status = ENABLE` and `startDate <= now < endDate`).
    #[serde(default)]
    pub active: bool,
    /// `sub` of the creator.
    pub created_by: String,
    /// `sub` of the last editor.
    pub last_modified_by: String,
    /// Creation time.
    pub created_date: DateTime<Utc>,
    /// Last update time.
    pub last_modified_date: DateTime<Utc>,
}

impl Campaign {
    /// Whether the campaign runs at `now`: the status in force at `now`
    /// ([`status_at`](Self::status_at)) is `ENABLE` and
    /// `startDate <= now < endDate`.
    pub fn is_running(&self, now: DateTime<Utc>) -> bool {
        *self.status_at(now) == CampaignStatus::Enable
            && self.start_date <= now
            && now < self.end_date
    }

    /// The status in force at `now`: `status`, or the status of the latest
    /// scheduled change at or before `now`.
    pub fn status_at(&self, now: DateTime<Utc>) -> &CampaignStatus {
        super::schedule::status_at(&self.status, &self.status_schedule, now)
    }

    /// The campaign with `active` computed for `now`.
    #[must_use]
    pub fn with_active(mut self, now: DateTime<Utc>) -> Self {
        self.active = self.is_running(now);
        self
    }
}

/// A cart as sent to search and redeem.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Cart {
    /// Total price, as a string or a number.
    #[serde(default)]
    pub total_price: Option<Scalar>,
    /// Currency code.
    #[serde(default)]
    pub currency: Option<Scalar>,
    /// The items.
    #[serde(default)]
    pub items: Vec<CartItem>,
}

/// One cart line.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CartItem {
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Item identifier.
    #[serde(default)]
    pub sku: Option<Scalar>,
    /// Quantity, as a string or a number.
    #[serde(default)]
    pub amount: Option<Scalar>,
    /// Unit price, as a string or a number.
    #[serde(default)]
    pub price: Option<Scalar>,
    /// Tags of the item.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// A search request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SearchRequest {
    /// Optional label of the event.
    #[serde(default)]
    pub name: Option<String>,
    /// Channel; campaigns with a channel only run for requests of it.
    #[serde(default)]
    pub channel: Option<String>,
    /// Custom attributes: strings, numbers, booleans or arrays of them.
    #[serde(default)]
    pub attribute: Map<String, Value>,
    /// The cart.
    #[serde(default)]
    pub cart: Cart,
}

/// The campaign of a matched action, as the search response shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CampaignRef {
    /// Campaign id.
    pub id: Uuid,
    /// Marketing name.
    pub name: String,
    /// Start of the running period.
    pub start_date: DateTime<Utc>,
    /// End of the running period.
    pub end_date: DateTime<Utc>,
    /// Reference code.
    pub ref_code: String,
    /// Marketing image address.
    #[serde(default)]
    pub image_url: Option<String>,
}

/// The rule of a matched action, as the search response shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RuleRef {
    /// Rule id.
    pub id: String,
    /// Rule name.
    pub name: String,
    /// `AND` or `OR`.
    pub then_operator: ThenOperator,
}

/// One matched benefit.
///
/// Its parts are shared (`Arc`) with the compiled snapshot that a search
/// ran on: the rule's and the campaign's wire forms are built once per
/// saved campaign, and so is a benefit without formula or placeholder, so
/// a search that returns hundreds of actions copies none of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
pub struct ActionMatch {
    /// The rule that fired.
    pub rule: Arc<RuleRef>,
    /// Its campaign.
    pub campaign: Arc<CampaignRef>,
    /// The benefit, with formulas evaluated and placeholders substituted.
    pub action: Arc<Then>,
}

/// Why a running campaign did not fire (search with `explain`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// Campaign id.
    pub campaign_id: Uuid,
    /// Campaign reference code.
    pub ref_code: String,
    /// `no_rule_fired`, `rule_not_valid_now`, `condition_failed`,
    /// `formula_failed`, `quota_exhausted`, `no_rules`; for a campaign that
    /// fired but was suppressed by another's stacking rules,
    /// `exclusive_campaign`, `stacking_group` or `stopped`.
    pub reason: String,
    /// The rule concerned, when one.
    #[serde(default)]
    pub rule_id: Option<String>,
    /// Path of the failed condition: `rules[0].when[1].conditions[2]`.
    #[serde(default)]
    pub field: Option<String>,
    /// The failed condition's attribute.
    #[serde(default)]
    pub attribute: Option<String>,
    /// The failed condition's op.
    #[serde(default)]
    pub op: Option<String>,
    /// What the condition expected.
    #[serde(default)]
    pub expected: Option<String>,
    /// What the request had (`null` when missing).
    #[serde(default)]
    pub actual: Option<String>,
    /// The quota key that blocked the campaign.
    #[serde(default)]
    pub quota_key: Option<String>,
    /// The campaign whose stacking rules suppressed this one (`refCode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppressed_by: Option<String>,
    /// A sentence for humans.
    pub message: String,
}

/// The response of search.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
pub struct SearchResponse {
    /// Echo of the request's attributes.
    #[serde(default)]
    pub attribute: Map<String, Value>,
    /// One entry per matched benefit, in priority order.
    #[serde(default)]
    pub actions: Vec<ActionMatch>,
    /// With `explain`: why each running campaign that did not fire failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<Explanation>>,
}

/// A redeem request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RedeemRequest {
    /// Reference code of the campaign (required unless `code` is given).
    #[serde(default)]
    pub campaign_code: String,
    /// The chosen benefits; omitted: every benefit of every firing `AND` rule.
    #[serde(default)]
    pub action_refs: Option<Vec<String>>,
    /// Channel, as for search.
    #[serde(default)]
    pub channel: Option<String>,
    /// Custom attributes, as for search.
    #[serde(default)]
    pub attribute: Map<String, Value>,
    /// The cart, as for search.
    #[serde(default)]
    pub cart: Cart,
    /// Idempotency key (the HTTP header `Idempotency-Key` takes precedence).
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// The other campaigns (`refCode`s) applied to the same order; the
    /// redeem is refused when their stacking rules forbid the combination.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with_campaigns: Vec<String>,
    /// A code of the campaign's code pool (case, spaces and dashes do not
    /// matter). With a code, `campaignCode` may be omitted: the code names
    /// its campaign. A campaign with a code pool needs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

impl RedeemRequest {
    /// The search request with the same channel, attributes and cart.
    pub fn as_search(&self) -> SearchRequest {
        SearchRequest {
            name: None,
            channel: self.channel.clone(),
            attribute: self.attribute.clone(),
            cart: self.cart.clone(),
        }
    }
}

string_enum! {
    /// Status of an action transaction (and of a redemption).
    pub enum TxStatus {
        /// Recorded.
        Complete = "COMPLETE",
        /// Cancelled; its quota was given back.
        Cancelled = "CANCELLED",
    }
}

/// One recorded benefit of a redemption.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
pub struct ActionTx {
    /// `COMPLETE` or `CANCELLED`.
    pub status: TxStatus,
    /// The benefit, with formulas evaluated.
    pub then: Then,
}

/// An amount charged to a quota key by a redemption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
pub struct QuotaCharge {
    /// The templated key.
    pub key: String,
    /// The amount added (1, or the value of `valueField`).
    #[serde(with = "wire::decimal_number")]
    #[cfg_attr(feature = "http", schema(value_type = f64))]
    pub amount: Decimal,
    /// The limit the key must stay within.
    #[serde(with = "wire::decimal_number")]
    #[cfg_attr(feature = "http", schema(value_type = f64))]
    pub limit: Decimal,
    /// The rolling window of the quota, when it has one: the limit holds
    /// in any window of this duration (the counter is the key and the
    /// window). Absent: a calendar quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "http", schema(value_type = Option<String>, example = "PT24H"))]
    pub window: Option<QuotaWindow>,
}

/// A recorded redemption; also the response of redeem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Redemption {
    /// Redemption id (for cancel).
    pub id: Uuid,
    /// Project.
    pub project_id: String,
    /// Campaign id.
    pub campaign_id: Uuid,
    /// Campaign reference code.
    pub campaign_code: String,
    /// The campaign version the request was evaluated against.
    pub campaign_version: i64,
    /// `COMPLETE`, or `CANCELLED` once cancelled.
    pub status: TxStatus,
    /// The request's `attribute.userId`, when a string or number.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Channel of the request.
    #[serde(default)]
    pub channel: Option<String>,
    /// Idempotency key of the request.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// A fingerprint of the request that recorded it (with an idempotency
    /// key): a later request with the key and another body is refused. Kept
    /// by the stores, never written on the wire.
    #[serde(skip)]
    pub request_fingerprint: Option<String>,
    /// One per redeemed benefit.
    pub action_txs: Vec<ActionTx>,
    /// What was charged to which quota key.
    pub quotas: Vec<QuotaCharge>,
    /// The code of the campaign's code pool the redemption used (its
    /// normalized form); a cancel gives its use back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// When recorded.
    pub created_date: DateTime<Utc>,
    /// When cancelled.
    #[serde(default)]
    pub cancelled_date: Option<DateTime<Utc>>,
}

/// The usage of one quota key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
pub struct QuotaUsage {
    /// The templated key.
    pub key: String,
    /// Sum of the amounts of COMPLETE redemptions charged to it: a JSON
    /// number whose text is the exact decimal.
    #[serde(with = "wire::decimal_number")]
    #[cfg_attr(feature = "http", schema(value_type = f64))]
    pub used: Decimal,
    /// The limit of the campaign's quota that produced the key, when known.
    #[serde(default, with = "wire::decimal_number::option")]
    #[cfg_attr(feature = "http", schema(value_type = Option<f64>))]
    pub limit: Option<Decimal>,
    /// The rolling window of the counter (`used` is then the usage in the
    /// window ending now); absent: a calendar quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "http", schema(value_type = Option<String>, example = "PT24H"))]
    pub window: Option<QuotaWindow>,
    /// The part of `used` reserved by live holds (not yet confirmed);
    /// absent when none.
    #[serde(
        default,
        with = "wire::decimal_number::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "http", schema(value_type = Option<f64>))]
    pub held: Option<Decimal>,
}

impl Campaign {
    /// What a client would send to save this campaign unchanged (its
    /// version included, so that a save over a newer version is refused
    /// as stale).
    pub fn to_input(&self) -> CampaignInput {
        CampaignInput {
            name: self.name.clone(),
            description: self.description.clone(),
            image_url: self.image_url.clone(),
            start_date: Some(self.start_date),
            end_date: Some(self.end_date),
            ref_code: self.ref_code.clone(),
            status: self.status.clone(),
            priority: Some(self.priority),
            channel: self.channel.clone(),
            group_name: self.group_name.clone(),
            stacking: self.stacking.clone(),
            time_zone: self.time_zone.clone(),
            status_schedule: self.status_schedule.clone(),
            quotas: self.quotas.clone(),
            rules: self.rules.clone(),
            version: Some(self.version),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn campaign_input_from_spec_shaped_json() {
        let json = r#"{
            "name": "Buy 2 get 10% off", "refCode": "B2G10",
            "startDate": "2026-01-01T00:00:00+07:00", "endDate": "2026-12-31T00:00:00Z",
            "status": "ENABLE", "priority": 1, "channel": null,
            "quotas": [{"id": null, "key": "${campaignCode}", "value": 100, "valueField": "", "description": null, "campaign": null, "projectId": null}],
            "rules": [{
                "id": "7c1f0a52-9f57-4f0a-8a9b-0d3f1c7e5a10", "name": "r1", "description": null,
                "when": [{"match": "ALL", "conditions": [
                    {"type": "cartItem", "attribute": "amount", "op": "gte", "value": "2", "valueType": "NUMBER", "note": null, "resolveAction": false},
                    {"type": "custom", "attribute": "promo", "op": "in", "value": "(\"A\",\"B\")", "valueType": "STRING"}
                ]}],
                "thenOperator": "AND",
                "then": [{"action": "DISCOUNT", "internalAction": false, "actionRef": "5d2c7c9e-1111-4c3b-9d7e-2f8a9b0c1d2e",
                          "data": [{"attribute": "amount", "value": "10", "type": null, "op": null, "valueType": "STRING", "note": null, "resolveAction": false}]}],
                "validFrom": null, "validTo": null, "campaign": null
            }]
        }"#;
        let c: CampaignInput = serde_json::from_str(json).unwrap();
        assert_eq!(
            c.start_date.unwrap().to_rfc3339(),
            "2025-12-31T17:00:00+00:00"
        );
        assert_eq!(c.rules[0].when[0].conditions[0].op, Op::Gte);
        assert_eq!(
            c.rules[0].when[0].conditions[0].value_type,
            ValueType::Number
        );
        assert_eq!(c.rules[0].when[0].conditions[1].kind, ConditionType::Custom);
        assert_eq!(c.quotas[0].value, Decimal::from(100));
        let back = serde_json::to_value(&c).unwrap();
        assert_eq!(back["rules"][0]["thenOperator"], "AND");
        assert_eq!(
            back["rules"][0]["then"][0]["actionRef"],
            "5d2c7c9e-1111-4c3b-9d7e-2f8a9b0c1d2e"
        );
        assert_eq!(back["rules"][0]["when"][0]["match"], "ALL");
        assert_eq!(
            back["rules"][0]["when"][0]["conditions"][0]["valueType"],
            "NUMBER"
        );
        assert_eq!(back["quotas"][0]["value"], 100);
        let again: CampaignInput = serde_json::from_value(back).unwrap();
        assert_eq!(again, c);
    }

    #[test]
    fn unknown_enum_values_survive_deserialization() {
        let json = r#"{"type": "basket", "attribute": "x", "op": "like", "value": 5, "valueType": "DATE"}"#;
        let c: Condition = serde_json::from_str(json).unwrap();
        assert_eq!(c.kind, ConditionType::Unknown("basket".into()));
        assert_eq!(c.op, Op::Unknown("like".into()));
        assert_eq!(c.value, "5");
        assert_eq!(c.value_type, ValueType::Unknown("DATE".into()));
    }

    #[test]
    fn search_request_with_numbers_as_strings_or_numbers() {
        let json = r#"{
            "name": "checkout", "channel": "web",
            "attribute": {"userId": "u1", "promoCode": "SAVE10", "points": "120"},
            "cart": {"totalPrice": "1500.50", "currency": "THB", "items": [
                {"name": "Shirt", "sku": "SKU-1", "amount": 2, "price": "500.25", "tags": ["apparel"]},
                {"name": "Cap", "sku": "SKU-2", "amount": "1", "price": 500}
            ]}
        }"#;
        let r: SearchRequest = serde_json::from_str(json).unwrap();
        assert_eq!(
            r.cart
                .total_price
                .as_ref()
                .unwrap()
                .to_decimal()
                .unwrap()
                .to_string(),
            "1500.50"
        );
        assert_eq!(
            r.cart.items[0].amount.as_ref().unwrap().to_decimal(),
            Some(Decimal::from(2))
        );
        assert_eq!(
            r.cart.items[1].amount.as_ref().unwrap().to_decimal(),
            Some(Decimal::from(1))
        );
        assert!(r.cart.items[1].tags.is_empty());
        let back = serde_json::to_value(&r).unwrap();
        assert_eq!(back["cart"]["items"][0]["amount"], 2);
        assert_eq!(back["cart"]["items"][1]["amount"], "1");
    }

    #[test]
    fn nested_search_response_deserializes() {
        let json = r#"{
            "attribute": {"userId": "u1"},
            "actions": [{
                "rule": {"id": "r1", "name": "Rule 1", "thenOperator": "OR"},
                "campaign": {"id": "0b7e5c1a-2d3f-4e5a-9b8c-7d6e5f4a3b2c", "name": "Freebie", "startDate": "2026-01-01T00:00:00Z",
                             "endDate": "2027-01-01T00:00:00Z", "refCode": "FREEBIE", "imageUrl": null},
                "action": {"action": "FREE_GIFT", "internalAction": false, "actionRef": "a1",
                           "data": [{"attribute": "sku", "value": "GIFT-1"}]}
            }]
        }"#;
        let r: SearchResponse = serde_json::from_str(json).unwrap();
        assert_eq!(r.actions[0].rule.then_operator, ThenOperator::Or);
        assert_eq!(r.actions[0].campaign.ref_code, "FREEBIE");
        assert_eq!(r.actions[0].action.data[0].value, "GIFT-1");
        let out = serde_json::to_value(&r).unwrap();
        assert!(out.get("explain").is_none());
        assert_eq!(
            out["actions"][0]["campaign"]["startDate"],
            "2026-01-01T00:00:00Z"
        );
    }

    #[test]
    fn redeem_response_uses_action_txs() {
        let r = Redemption {
            id: Uuid::nil(),
            project_id: "p".into(),
            campaign_id: Uuid::nil(),
            campaign_code: "C".into(),
            campaign_version: 1,
            status: TxStatus::Complete,
            user_id: None,
            channel: None,
            idempotency_key: None,
            request_fingerprint: None,
            action_txs: vec![ActionTx {
                status: TxStatus::Complete,
                then: Then {
                    action: Some("DISCOUNT".into()),
                    internal_action: false,
                    action_ref: "a".into(),
                    data: vec![DataItem::text("amount", "10")],
                    ..Then::default()
                },
            }],
            quotas: vec![],
            code: None,
            created_date: DateTime::UNIX_EPOCH,
            cancelled_date: None,
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["actionTxs"][0]["status"], "COMPLETE");
        assert_eq!(v["actionTxs"][0]["then"]["actionRef"], "a");
        assert_eq!(v["createdDate"], "1970-01-01T00:00:00Z");
        let back: Redemption = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }
}
