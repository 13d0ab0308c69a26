//! Planning a redemption: which benefits, evaluated how, charged to which
//! quota keys. The store then applies the plan atomically.

use chrono::{DateTime, Utc};

use super::compile::CompiledCampaign;
use super::eval::{explain, Evaluator, Held};
use super::plan::RulePlan;
use super::request::Prepared;
use super::{benefit, is_or};
use crate::core::campaign::{ActionTx, Campaign, QuotaCharge, RedeemRequest, Then, TxStatus};
use crate::core::error::ErrorCode;
use crate::core::limits::MAX_ACTION_REFS;
use crate::{Error, FieldError, Result};

/// What a redemption will record, decided without I/O.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRedemption {
    /// One per redeemed benefit, formulas evaluated.
    pub action_txs: Vec<ActionTx>,
    /// The quota charges, one per distinct key, sorted by key.
    pub charges: Vec<QuotaCharge>,
}

fn unprocessable(code: ErrorCode, message: impl Into<String>) -> Error {
    Error::new(code, message)
}

/// Re-evaluates `cc` (whose rule plans are `rules`) against the request at
/// `now` and plans the redemption.
///
/// - The campaign must be running and, if it has a channel, the request must
///   be of it (`campaign_not_active`, `channel_mismatch`).
/// - At least one rule must fire (`conditions_not_met`, with the first
///   failed condition).
/// - `actionRefs` omitted: every benefit of every firing `AND` rule; if an
///   `OR` rule fires, the client must choose (`action_choice_required`).
/// - `actionRefs` given: exactly those benefits, each of a firing rule
///   (`unknown_action_ref` otherwise); naming a benefit of an `AND` rule
///   redeems all of that rule's benefits, since they apply together.
pub(crate) fn plan(
    cc: &CompiledCampaign,
    rules: &[RulePlan],
    req: &Prepared<'_>,
    request: &RedeemRequest,
    now: DateTime<Utc>,
) -> Result<PlannedRedemption> {
    let c = &cc.campaign;
    if !c.is_running(now) {
        return Err(unprocessable(
            ErrorCode::CampaignNotActive,
            format!(
                "campaign {:?} is not running (status {} now, {} to {})",
                c.ref_code,
                c.status_at(now),
                c.start_date,
                c.end_date
            ),
        ));
    }
    if let Some(channel) = &c.channel {
        if request.channel.as_ref() != Some(channel) {
            return Err(unprocessable(
                ErrorCode::ChannelMismatch,
                format!("campaign {:?} runs on channel {channel:?} only", c.ref_code),
            ));
        }
    }
    let mut ev = Evaluator::default();
    let firing: Vec<(usize, Held)> = rules
        .iter()
        .filter(|rule| rule.valid_at(now))
        .filter_map(|rule| {
            ev.rule(rule, req, false)
                .map(|held| (rule.rule as usize, held))
        })
        .collect();
    if firing.is_empty() {
        let why = explain(cc, rules, req, now);
        let fields = why
            .field
            .iter()
            .map(|f| {
                // The explanation's reason is a field code of the catalogue.
                let code = why.reason.parse().unwrap_or(ErrorCode::ConditionFailed);
                FieldError::new(f.clone(), code, why.message.clone())
            })
            .collect();
        return Err(unprocessable(
            ErrorCode::ConditionsNotMet,
            format!("the campaign's conditions are not met: {}", why.message),
        )
        .with_fields(fields));
    }

    let selected = select(c, &firing, request.action_refs.as_deref())?;

    let item_of = |r: usize| {
        firing
            .iter()
            .find(|(fr, _)| *fr == r)
            .and_then(|(_, held)| held.0)
    };
    let thens: Vec<Then> = selected
        .iter()
        .map(|&(r, b)| {
            benefit::evaluate(&cc.rules[r].benefits[b], (r, b), item_of(r), cc, req, now)
                .map(std::sync::Arc::unwrap_or_clone)
        })
        .collect::<Result<_>>()?;
    let charges = benefit::charges(cc, &thens, req, now)?;
    Ok(PlannedRedemption {
        action_txs: thens
            .into_iter()
            .map(|then| ActionTx {
                status: TxStatus::Complete,
                then,
            })
            .collect(),
        charges,
    })
}

/// The (rule, benefit) pairs to redeem, in rule then benefit order, from the
/// firing rules and the client's choice.
fn select(
    c: &Campaign,
    firing: &[(usize, Held)],
    action_refs: Option<&[String]>,
) -> Result<Vec<(usize, usize)>> {
    let mut selected: Vec<(usize, usize)> = Vec::new();
    match action_refs {
        None => {
            if let Some(&(r, _)) = firing
                .iter()
                .find(|(r, _)| is_or(&c.rules[*r].then_operator))
            {
                let choices: Vec<&str> = c.rules[r]
                    .then
                    .iter()
                    .map(|t| t.action_ref.as_str())
                    .collect();
                return Err(unprocessable(
                    ErrorCode::ActionChoiceRequired,
                    format!("rule {:?} is an OR rule: choose among its benefits with actionRefs {choices:?}", c.rules[r].name),
                ));
            }
            for &(r, _) in firing {
                selected.extend((0..c.rules[r].then.len()).map(|b| (r, b)));
            }
        }
        Some(refs) => {
            if refs.is_empty() {
                return Err(Error::invalid_field(
                    "actionRefs",
                    ErrorCode::NoActionSelected,
                    "actionRefs is empty: choose at least one benefit",
                ));
            }
            if refs.len() > MAX_ACTION_REFS {
                let message = format!("actionRefs names more than {MAX_ACTION_REFS} benefits");
                return Err(
                    Error::new(ErrorCode::RequestTooLarge, message.clone()).with_fields(vec![
                        crate::FieldError::new("actionRefs", ErrorCode::TooMany, message),
                    ]),
                );
            }
            let mut problems = Vec::new();
            for (i, action_ref) in refs.iter().enumerate() {
                let found = firing.iter().find_map(|&(r, _)| {
                    c.rules[r]
                        .then
                        .iter()
                        .position(|t| &t.action_ref == action_ref)
                        .map(|b| (r, b))
                });
                match found {
                    Some((r, b)) if is_or(&c.rules[r].then_operator) => selected.push((r, b)),
                    Some((r, _)) => selected.extend((0..c.rules[r].then.len()).map(|b| (r, b))),
                    None => {
                        let exists = c
                            .rules
                            .iter()
                            .any(|rule| rule.then.iter().any(|t| &t.action_ref == action_ref));
                        let message = if exists {
                            format!("benefit {action_ref:?} belongs to a rule whose conditions are not met")
                        } else {
                            format!("campaign {:?} has no benefit {action_ref:?}", c.ref_code)
                        };
                        problems.push(FieldError::new(
                            format!("actionRefs[{i}]"),
                            ErrorCode::UnknownActionRef,
                            message,
                        ));
                    }
                }
            }
            if !problems.is_empty() {
                let message = problems[0].message.clone();
                return Err(
                    unprocessable(ErrorCode::UnknownActionRef, message).with_fields(problems)
                );
            }
            selected.sort_unstable();
            selected.dedup();
        }
    }
    Ok(selected)
}
