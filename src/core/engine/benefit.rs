//! Evaluating benefits (formulas and `${name}` text) and quota charges.

use std::borrow::{Borrow, Cow};
use std::sync::Arc;

use chrono::{DateTime, Datelike, Utc};
use chrono_tz::Tz;
use rust_decimal::Decimal;

use super::compile::{fixed, CompiledBenefit, CompiledCampaign, Value};
use super::money;
use super::request::{Item, Prepared};
use crate::core::campaign::{DataItem, QuotaCharge, Then};
use crate::core::error::ErrorCode;
use crate::core::formula::Lookup;
use crate::core::wire::parse_decimal;
use crate::{Error, FieldError, Result};

/// The reserved names of templates and formulas.
pub const RESERVED_NAMES: [&str; 7] = [
    "campaignCode",
    "campaignId",
    "channel",
    "day",
    "month",
    "year",
    "week",
];

/// The value of a reserved name. `channel` is the campaign's channel, or the
/// request's when the campaign has none.
pub(crate) fn reserved<'a>(
    name: &str,
    cc: &'a CompiledCampaign,
    req: &'a Prepared<'_>,
    now: DateTime<Utc>,
) -> Option<Cow<'a, str>> {
    if let Some(value) = fixed(&cc.campaign, name) {
        return Some(value);
    }
    Some(match name {
        "channel" => Cow::Borrowed(req.request.channel?),
        "day" | "month" | "year" | "week" => Cow::Owned(calendar(name, now, cc.zone)?),
        _ => return None,
    })
}

/// A calendar name at `now` in `zone`: `day` (1 to 31), `month` (1 to 12),
/// `year` (AD) of the local date, and `week`, the ISO 8601 week with its
/// week-based year (`2026-W01`): the week of 29 December may belong to the
/// next year, so the week alone names one week of all time.
pub fn calendar(name: &str, now: DateTime<Utc>, zone: Tz) -> Option<String> {
    let local = now.with_timezone(&zone);
    Some(match name {
        "day" => local.day().to_string(),
        "month" => local.month().to_string(),
        "year" => local.year().to_string(),
        "week" => {
            let w = local.iso_week();
            format!("{}-W{:02}", w.year(), w.week())
        }
        _ => return None,
    })
}

/// Resolves a benefit name, in the order of the design: the matched cart
/// item, the request attributes, the cart, the reserved names.
fn benefit_name<'a>(
    name: &str,
    item: Option<&'a Item>,
    cc: &'a CompiledCampaign,
    req: &'a Prepared<'_>,
    now: DateTime<Utc>,
) -> Option<Cow<'a, str>> {
    if let Some(v) = item.and_then(|i| i.lookup(name)) {
        return Some(Cow::Borrowed(v));
    }
    if let Some(v) = req.attribute_text(name) {
        return Some(v);
    }
    if let Some(v) = req.cart_text(name) {
        return Some(Cow::Borrowed(v));
    }
    reserved(name, cc, req, now)
}

/// Formats a formula result: normalized, so `10.00` is `10`.
fn format_decimal(d: Decimal) -> String {
    d.normalize().to_string()
}

/// Evaluates benefit `b` of rule `r`: formulas computed, placeholders
/// substituted. A static benefit (no formula, no placeholder) is shared, not
/// copied.
pub(crate) fn evaluate(
    benefit: &CompiledBenefit,
    (r, b): (usize, usize),
    item_index: Option<usize>,
    cc: &CompiledCampaign,
    req: &Prepared<'_>,
    now: DateTime<Utc>,
) -> Result<Arc<Then>> {
    if benefit.is_static {
        return Ok(Arc::clone(&benefit.then));
    }
    let item = item_index.map(|i| &req.items[i]);
    let resolve = |name: &str| benefit_name(name, item, cc, req, now);
    let mut data: Vec<DataItem> = Vec::with_capacity(benefit.values.len());
    for (d, (value, source)) in benefit.values.iter().zip(&benefit.then.data).enumerate() {
        // Built only on error: search evaluates many benefits.
        let field = || format!("rules[{r}].then[{b}].data[{d}].value");
        let text = match value {
            Value::Text(t) => t.render(&|name| resolve(name)).map_err(|e| {
                let message = e.to_string();
                let mut problem = FieldError::new(field(), e.code(), message);
                problem.span = e.span().map(Into::into);
                Error::from(problem)
            })?,
            Value::Formula(f) => {
                let lookup = |name: &str| match resolve(name) {
                    None => Lookup::Missing,
                    Some(v) => parse_decimal(&v)
                        .map_or_else(|| Lookup::NotANumber(v.into_owned()), Lookup::Number),
                };
                let n = f.eval(&lookup).map_err(|e| {
                    let message = e.to_string();
                    Error::from(FieldError::new(field(), e.code(), message).with_span(e.span()))
                })?;
                format_decimal(n)
            }
        };
        data.push(DataItem {
            value: text,
            attribute: source.attribute.clone(),
            kind: source.kind.clone(),
            op: source.op.clone(),
            value_type: source.value_type.clone(),
            note: source.note.clone(),
            resolve_action: source.resolve_action,
            is_formula: source.is_formula,
        });
    }
    let then = &benefit.then;
    let mut out = Then {
        action: then.action.clone(),
        internal_action: then.internal_action,
        action_ref: then.action_ref.clone(),
        data,
        cap: then.cap.clone(),
        allocate: then.allocate.clone(),
        allocation: None,
        capped: None,
    };
    let path = || format!("rules[{r}].then[{b}]");
    money::apply(
        &mut out,
        &money::Place {
            path: &path,
            item: item_index,
        },
        req,
    )?;
    Ok(Arc::new(out))
}

/// The quota charges of a redemption of `benefits` (already evaluated):
/// one per distinct key, amounts summed and the smallest limit kept, sorted
/// by key (the order in which SQL stores lock them).
pub(crate) fn charges<B: Borrow<Then>>(
    cc: &CompiledCampaign,
    benefits: &[B],
    req: &Prepared<'_>,
    now: DateTime<Utc>,
) -> Result<Vec<QuotaCharge>> {
    let charges = (0..cc.quotas.len())
        .map(|q| charge(cc, q, benefits, req, now))
        .collect::<Result<Vec<_>>>()?;
    merge(charges)
}

/// Merges charges to the same counter — key and window — (amounts summed,
/// smallest limit kept) and sorts them by key, then window (calendar
/// first). A sum beyond Decimal's range is an
/// `invalid_quota_amount` error, never a panic.
pub(crate) fn merge(charges: Vec<QuotaCharge>) -> Result<Vec<QuotaCharge>> {
    if charges.len() < 2 {
        return Ok(charges);
    }
    let mut out: Vec<QuotaCharge> = Vec::with_capacity(charges.len());
    for c in charges {
        match out
            .iter_mut()
            .find(|o| o.key == c.key && o.window == c.window)
        {
            Some(existing) => {
                existing.amount = existing.amount.checked_add(c.amount).ok_or_else(|| {
                    Error::invalid_field(
                        "quotas",
                        ErrorCode::InvalidQuotaAmount,
                        format!("the charges to quota {:?} add up beyond any limit", c.key),
                    )
                })?;
                existing.limit = existing.limit.min(c.limit);
            }
            None => out.push(c),
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key).then(a.window.cmp(&b.window)));
    Ok(out)
}

/// The charge of quota `q` for a redemption of `benefits`.
///
/// Key names resolve from the reserved names first (a request cannot spoof
/// `campaignCode`), then the benefits' attributes, then the request's
/// attributes. The amount is 1, or the `valueField`: the sum of that
/// attribute over the redeemed benefits that have it, else the request
/// attribute of that name.
pub(crate) fn charge<B: Borrow<Then>>(
    cc: &CompiledCampaign,
    q: usize,
    benefits: &[B],
    req: &Prepared<'_>,
    now: DateTime<Utc>,
) -> Result<QuotaCharge> {
    let quota = &cc.quotas[q];
    let benefit_attr = |name: &str| {
        benefits
            .iter()
            .flat_map(|b| &b.borrow().data)
            .find(|d| d.attribute == name)
            .map(|d| d.value.as_str())
    };
    let resolve = |name: &str| -> Option<Cow<'_, str>> {
        reserved(name, cc, req, now)
            .or_else(|| benefit_attr(name).map(Cow::Borrowed))
            .or_else(|| req.attribute_text(name))
    };
    let key = quota.key.render(&|name| resolve(name)).map_err(|e| {
        Error::invalid_field(
            format!("quotas[{q}].key"),
            ErrorCode::QuotaKeyUnresolved,
            format!(
                "the quota key {:?} cannot be built: {e}",
                cc.campaign.quotas[q].key
            ),
        )
    })?;
    if key.len() > crate::core::limits::MAX_QUOTA_KEY_LEN {
        return Err(Error::invalid_field(
            format!("quotas[{q}].key"),
            ErrorCode::QuotaKeyTooLong,
            format!(
                "the quota key {:?} renders to {} bytes for this request; at most {} are allowed",
                cc.campaign.quotas[q].key,
                key.len(),
                crate::core::limits::MAX_QUOTA_KEY_LEN
            ),
        ));
    }
    let amount = match &quota.value_field {
        None => Decimal::ONE,
        Some(field) => quota_amount(field, benefits, req).map_err(|message| {
            Error::invalid_field(
                format!("quotas[{q}].valueField"),
                ErrorCode::InvalidQuotaAmount,
                message,
            )
        })?,
    };
    Ok(QuotaCharge {
        key,
        amount,
        limit: quota.limit,
        window: quota.window,
    })
}

fn quota_amount<B: Borrow<Then>>(
    field: &str,
    benefits: &[B],
    req: &Prepared<'_>,
) -> std::result::Result<Decimal, String> {
    let from_benefits: Vec<&str> = benefits
        .iter()
        .flat_map(|b| &b.borrow().data)
        .filter(|d| d.attribute == field)
        .map(|d| d.value.as_str())
        .collect();
    let texts: Vec<Cow<'_, str>> = if from_benefits.is_empty() {
        match req.attribute_text(field) {
            Some(v) => vec![v],
            None => {
                return Err(format!(
                    "{field:?} is neither a benefit attribute nor a request attribute"
                ))
            }
        }
    } else {
        from_benefits.into_iter().map(Cow::Borrowed).collect()
    };
    let mut sum = Decimal::ZERO;
    for t in texts {
        let n = parse_decimal(&t).ok_or_else(|| format!("{field:?} is {t:?}, not a number"))?;
        if n < Decimal::ZERO {
            return Err(format!(
                "{field:?} is {t}; a quota amount cannot be negative"
            ));
        }
        sum = sum
            .checked_add(n)
            .ok_or_else(|| format!("the sum of {field:?} overflows"))?;
    }
    Ok(sum)
}
