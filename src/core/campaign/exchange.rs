//! What search and redeem exchange with a client: carts, requests,
//! responses (matched benefits, explanations) and the recorded
//! redemptions with their quota charges. The campaign definitions they
//! refer to are in `model.rs`, which re-exports these.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::model::{Then, ThenOperator};
use super::window::QuotaWindow;
use crate::core::wire::{self, Scalar};
use crate::string_enum;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::campaign::model::DataItem;

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
