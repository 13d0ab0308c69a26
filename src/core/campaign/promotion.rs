//! Promotion controls beyond the specification's fields: benefit caps, the
//! allocation of a discount to cart lines, and how campaigns stack.
//!
//! Every field here is optional and absent from the wire when unset, so a
//! campaign that does not use them reads, evaluates and serializes exactly
//! as the specification shows.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::core::wire;
use crate::string_enum;

string_enum! {
    /// What bounds a capped benefit besides its `max`.
    pub enum CapScope {
        /// Never more than the cart's total (`totalPrice`, or the sum of
        /// its lines when absent).
        Cart = "CART",
        /// Never more than the matched cart line (unit `price` × `amount`).
        Item = "ITEM",
    }
}

string_enum! {
    /// How a benefit's amount is spread over the cart's lines.
    pub enum AllocateMethod {
        /// In proportion to each line's total, largest remainder in the
        /// currency's minor units, so the shares sum exactly to the amount.
        Proportional = "PROPORTIONAL",
    }
}

/// Bounds on a benefit's amount, applied every time it is evaluated
/// (search, redeem, preview).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BenefitCap {
    /// The data item holding the amount; `amount` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribute: Option<String>,
    /// At most this much per redemption. Read from a number or a numeric
    /// string; written as a string holding the exact decimal, like benefit
    /// values (so it is stored exactly too).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "wire::decimal_number::option::deserialize"
    )]
    #[cfg_attr(feature = "http", schema(value_type = Option<String>))]
    pub max: Option<Decimal>,
    /// `ITEM` bounds by the matched line, `CART` by the cart. Absent: `ITEM`
    /// when the rule matched a cart item, else `CART`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<CapScope>,
}

impl BenefitCap {
    /// The data item the cap (and an allocation) applies to.
    pub fn attribute(&self) -> &str {
        self.attribute
            .as_deref()
            .unwrap_or(DEFAULT_AMOUNT_ATTRIBUTE)
    }
}

/// The data item a cap or an allocation applies to unless told otherwise.
pub const DEFAULT_AMOUNT_ATTRIBUTE: &str = "amount";

string_enum! {
    /// What reduced a capped benefit.
    pub enum CappedBy {
        /// The cap's `max`.
        Max = "MAX",
        /// The cart's total.
        Cart = "CART",
        /// The matched line's total.
        Item = "ITEM",
        /// The total of the cart lines an allocation can spread it over.
        Lines = "LINES",
        /// A negative amount, raised to zero.
        Zero = "ZERO",
    }
}

/// Set on an evaluated benefit whose amount a cap or an allocation reduced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Capped {
    /// The amount before the cap, as evaluated.
    pub original: String,
    /// The bound that applied last.
    pub by: CappedBy,
}

/// One cart line's share of an allocated benefit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LineShare {
    /// Position of the line in `cart.items`, from 0.
    pub line: usize,
    /// The line's `sku`, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sku: Option<String>,
    /// The share, an exact decimal in the currency's minor units.
    pub amount: String,
}

/// How a campaign combines with the other campaigns that apply to the same
/// request. Campaigns are taken in priority order (1 first, then by
/// `refCode`); each one applies unless a campaign taken before it
/// suppresses it:
///
/// - after an `exclusive` campaign applies, no other does; an `exclusive`
///   campaign applies only if nothing applied before it;
/// - of the campaigns of one `group`, only the first applies;
/// - after a `stopAfter` campaign applies, the campaigns after it are not
///   considered.
///
/// Absent, the campaign stacks with every other, as without this field.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "http", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Stacking {
    /// Applies alone.
    #[serde(default)]
    pub exclusive: bool,
    /// Stacking group: at most one campaign of a group applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// No campaign after this one (in priority order) applies.
    #[serde(default)]
    pub stop_after: bool,
}

impl Stacking {
    /// Whether this changes nothing (stacks with everything).
    pub fn is_default(&self) -> bool {
        !self.exclusive && self.group.is_none() && !self.stop_after
    }
}
