//! Caps on a benefit's amount and its allocation to cart lines.
//!
//! A capped benefit's amount is bounded, in this order, below by zero, by
//! the cap's `max`, and by the cart (its total) or the matched line (unit
//! price × quantity). An allocated benefit's amount is then rounded down to
//! the currency's minor units, bounded by the total of the lines it can be
//! spread over, and split over those lines in proportion to their totals by
//! the largest-remainder method in whole minor units: the shares always
//! sum exactly to the amount reported, none is negative, and none exceeds
//! its line.

use rust_decimal::Decimal;

use super::request::Prepared;
use crate::core::campaign::{
    CapScope, Capped, CappedBy, Cart, CartItem, LineShare, Then, DEFAULT_AMOUNT_ATTRIBUTE,
};
use crate::core::error::ErrorCode;
use crate::core::wire::parse_decimal;
use crate::{Error, Result};

/// The error codes of this stage; search reports a benefit dropped for one
/// of them with the code as its reason.
pub(crate) const CODES: [&str; 5] = [
    "invalid_benefit_amount",
    "cart_total_unknown",
    "item_price_unknown",
    "currency_unknown",
    "allocation_overflow",
];

/// The number of minor-unit digits of an ISO 4217 currency code (any
/// case). Codes the standard lists with 0, 3 or 4 digits are in the table;
/// codes without a minor unit (precious metals, testing codes) give `None`;
/// every other three-letter code has 2, as most currencies do.
pub fn minor_digits(code: &str) -> Option<u32> {
    const ZERO: [&str; 17] = [
        "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND",
        "VUV", "XAF", "XOF", "XPF",
    ];
    const THREE: [&str; 7] = ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"];
    const FOUR: [&str; 2] = ["CLF", "UYW"];
    const NONE: [&str; 13] = [
        "XAG", "XAU", "XBA", "XBB", "XBC", "XBD", "XDR", "XPD", "XPT", "XSU", "XTS", "XUA", "XXX",
    ];
    let code = code.trim();
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_alphabetic()) {
        return None;
    }
    let code = code.to_ascii_uppercase();
    let c = code.as_str();
    if NONE.contains(&c) {
        None
    } else if ZERO.contains(&c) {
        Some(0)
    } else if THREE.contains(&c) {
        Some(3)
    } else if FOUR.contains(&c) {
        Some(4)
    } else {
        Some(2)
    }
}

/// Splits `total` units over `weights` in proportion, by largest remainder:
/// each share is `floor(total × w / W)`, and the units left over go one
/// each to the largest remainders, the earlier line first on a tie.
///
/// Requires `0 <= total <= sum(weights)` and every weight `>= 0`; then the
/// shares sum to `total` and share `i` lies in `0..=weights[i]`. `None` when
/// those do not hold or the arithmetic overflows.
pub fn largest_remainder(total: i128, weights: &[i128]) -> Option<Vec<i128>> {
    if total < 0 || weights.iter().any(|&w| w < 0) {
        return None;
    }
    let sum = weights.iter().try_fold(0i128, |s, &w| s.checked_add(w))?;
    if total > sum {
        return None;
    }
    if sum == 0 {
        return Some(vec![0; weights.len()]);
    }
    let mut shares = Vec::with_capacity(weights.len());
    let mut remainders = Vec::with_capacity(weights.len());
    for (i, &w) in weights.iter().enumerate() {
        let p = total.checked_mul(w)?;
        shares.push(p / sum);
        remainders.push((p % sum, i));
    }
    let given: i128 = shares.iter().sum();
    let left = usize::try_from(total - given).ok()?;
    // Fewer units are left than lines with a remainder: the remainders sum
    // to `left × sum`, and each is below `sum`.
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, i) in remainders.iter().take(left) {
        shares[i] += 1;
    }
    Some(shares)
}

/// `10^digits` as a Decimal.
fn scale(digits: u32) -> Decimal {
    Decimal::from(10i64.pow(digits))
}

/// A line's total: unit price × quantity (quantity 1 when absent). `None`
/// when the price is absent or not a number, or the product overflows.
fn line_total(item: &CartItem) -> Option<Decimal> {
    let price = item.price.as_ref()?.to_decimal()?;
    let quantity = match &item.amount {
        None => Decimal::ONE,
        Some(q) => q.to_decimal()?,
    };
    price.checked_mul(quantity)
}

/// What an evaluated benefit's cap and allocation need to know of where it
/// was evaluated.
pub(crate) struct Place<'a> {
    /// Field path of the benefit: `rules[0].then[1]`.
    pub(crate) path: &'a dyn Fn() -> String,
    /// The cart line the rule matched, if any.
    pub(crate) item: Option<usize>,
}

/// Applies the benefit's cap and allocation to its evaluated data.
pub(crate) fn apply(then: &mut Then, place: &Place<'_>, req: &Prepared<'_>) -> Result<()> {
    if then.cap.is_none() && then.allocate.is_none() {
        return Ok(());
    }
    let cart = req.request.cart;
    let attribute = then
        .cap
        .as_ref()
        .map_or(DEFAULT_AMOUNT_ATTRIBUTE, |c| c.attribute())
        .to_owned();
    let d = then
        .data
        .iter()
        .position(|d| d.attribute == attribute)
        .ok_or_else(|| {
            Error::invalid_field(
                format!("{}.data", (place.path)()),
                ErrorCode::InvalidBenefitAmount,
                format!("the benefit has no data item {attribute:?} to cap or allocate"),
            )
        })?;
    let field = || format!("{}.data[{d}].value", (place.path)());
    let original = then.data[d].value.clone();
    let mut amount = parse_decimal(&original).ok_or_else(|| {
        Error::invalid_field(
            field(),
            ErrorCode::InvalidBenefitAmount,
            format!("the benefit's {attribute:?} is {original:?}, not a number"),
        )
    })?;
    let mut by = None;
    if amount < Decimal::ZERO {
        amount = Decimal::ZERO;
        by = Some(CappedBy::Zero);
    }
    // Whether the amount belongs to the matched line alone.
    let mut item_scope = false;
    if let Some(cap) = &then.cap {
        let bound = bound(cap, place, cart, &field)?;
        item_scope = bound.0 == CappedBy::Item;
        for (limit, why) in [(cap.max, CappedBy::Max), (Some(bound.1), bound.0)] {
            if let Some(limit) = limit.filter(|l| amount > *l) {
                amount = limit;
                by = Some(why);
            }
        }
    }
    if then.allocate.is_some() {
        let (allocated, shares) = allocate(amount, then, place, cart, item_scope, &field)?;
        // Rounding down to minor units is not a cap; the lines' total is.
        if shares.1 {
            by = Some(CappedBy::Lines);
        }
        amount = allocated;
        then.allocation = Some(shares.0);
    }
    if let Some(by) = by.filter(|_| parse_decimal(&original) != Some(amount)) {
        then.capped = Some(Capped { original, by });
    }
    then.data[d].value = amount.normalize().to_string();
    Ok(())
}

/// The cart or line bound of a cap: which one, and its value (never below
/// zero).
fn bound(
    cap: &crate::core::campaign::BenefitCap,
    place: &Place<'_>,
    cart: &Cart,
    field: &dyn Fn() -> String,
) -> Result<(CappedBy, Decimal)> {
    let scope = cap.scope.clone().unwrap_or(if place.item.is_some() {
        CapScope::Item
    } else {
        CapScope::Cart
    });
    if scope == CapScope::Item {
        let line = place
            .item
            .and_then(|i| line_total(&cart.items[i]))
            .ok_or_else(|| {
                Error::invalid_field(
                    field(),
                    ErrorCode::ItemPriceUnknown,
                    "the benefit is capped by its cart line, and the request's matched line has no price",
                )
            })?;
        Ok((CappedBy::Item, line.max(Decimal::ZERO)))
    } else {
        let total = cart_total(cart).ok_or_else(|| {
            Error::invalid_field(
                field(),
                ErrorCode::CartTotalUnknown,
                "the benefit is capped by the cart, and the request's cart has no totalPrice (nor a price on every line)",
            )
        })?;
        Ok((CappedBy::Cart, total.max(Decimal::ZERO)))
    }
}

/// The shares of `amount` (never negative) over the cart's lines (only the
/// matched one when `item_scope`): the amount allocated, and the shares
/// with whether the lines' total bounded the amount.
fn allocate(
    amount: Decimal,
    then: &Then,
    place: &Place<'_>,
    cart: &Cart,
    item_scope: bool,
    field: &dyn Fn() -> String,
) -> Result<(Decimal, (Vec<LineShare>, bool))> {
    let currency = cart
        .currency
        .as_ref()
        .map(|c| c.as_text().into_owned())
        .or_else(|| {
            then.data
                .iter()
                .find(|d| d.attribute == "currency")
                .map(|d| d.value.clone())
        });
    let digits = currency.as_deref().and_then(minor_digits).ok_or_else(|| {
        Error::invalid_field(
            "cart.currency",
            ErrorCode::CurrencyUnknown,
            format!(
                "allocating the benefit needs the cart's currency as an ISO 4217 code with minor units, and it is {}",
                currency.as_deref().map_or("absent".to_owned(), |c| format!("{c:?}"))
            ),
        )
    })?;
    let overflow = || {
        Error::invalid_field(
            field(),
            ErrorCode::AllocationOverflow,
            "the cart's amounts are too large to allocate in minor units",
        )
    };
    let unit = scale(digits);
    let to_units = |d: Decimal| -> Result<i128> {
        d.checked_mul(unit)
            .map(|u| u.trunc())
            .and_then(|u| i128::try_from(u).ok())
            .ok_or_else(overflow)
    };
    let weights = cart
        .items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            if item_scope && place.item != Some(i) {
                return Ok(0);
            }
            match line_total(item) {
                Some(t) if t > Decimal::ZERO => to_units(t),
                _ => Ok(0),
            }
        })
        .collect::<Result<Vec<i128>>>()?;
    let room = weights
        .iter()
        .try_fold(0i128, |s, &w| s.checked_add(w))
        .ok_or_else(overflow)?;
    let mut units = to_units(amount)?;
    let bounded = units > room;
    if bounded {
        units = room;
    }
    let shares = largest_remainder(units, &weights).ok_or_else(overflow)?;
    let to_decimal = |u: i128| -> Result<Decimal> {
        Decimal::try_from_i128_with_scale(u, digits).map_err(|_| overflow())
    };
    let lines = shares
        .iter()
        .enumerate()
        .map(|(line, &u)| {
            Ok(LineShare {
                line,
                sku: cart.items[line]
                    .sku
                    .as_ref()
                    .map(|s| s.as_text().into_owned()),
                amount: to_decimal(u)?.to_string(),
            })
        })
        .collect::<Result<_>>()?;
    Ok((to_decimal(units)?, (lines, bounded)))
}

/// The cart's total: `totalPrice`, else the sum of its lines when every
/// line has a price.
fn cart_total(cart: &Cart) -> Option<Decimal> {
    if let Some(t) = &cart.total_price {
        return t.to_decimal();
    }
    cart.items
        .iter()
        .try_fold(Decimal::ZERO, |s, i| s.checked_add(line_total(i)?))
}

#[cfg(test)]
mod tests;
