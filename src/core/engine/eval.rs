//! Evaluating rule plans against a prepared request, and explaining why
//! they did not fire.

use chrono::{DateTime, Utc};

use super::compile::CompiledCampaign;
use super::plan::{CondPlan, GroupPlan, RulePlan};
use super::request::{item_input, Prepared};
use crate::core::campaign::{Condition, Explanation, MatchKind};
use crate::core::condition::{Field, Input, Test};
use crate::core::hash::FxHashMap;

/// A group or rule that holds, with the cart item that satisfied its item
/// conditions (for a rule: those of its first group that has any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Held(pub(crate) Option<usize>);

/// Evaluates conditions for one request, memoising regex results per
/// (pattern, value): a pattern shared by many campaigns (they share one
/// compiled automaton, see `condition::compile_regex`) runs once per value.
#[derive(Default)]
pub(crate) struct Evaluator {
    regex_memo: FxHashMap<(usize, usize), bool>,
}

impl Evaluator {
    fn check(&mut self, test: &Test, field: &Field<'_>) -> Option<bool> {
        match test {
            Test::Regex(re) => {
                // Both addresses are stable for the whole search: the snapshot
                // and the prepared request are borrowed, never moved.
                let key = (
                    re.as_str().as_ptr() as usize,
                    std::ptr::from_ref(field) as usize,
                );
                Some(
                    *self
                        .regex_memo
                        .entry(key)
                        .or_insert_with(|| re.is_match(field.text())),
                )
            }
            other => other.check(field),
        }
    }

    fn holds(&mut self, c: &CondPlan, input: Input<'_>) -> bool {
        c.cond.eval_with(input, &mut |t, f| self.check(t, f))
    }

    /// Whether a group holds, and with which cart item. `trusted`: the
    /// index vouches for the conditions it indexed (the rule is one of its
    /// candidates), which are then not evaluated again.
    fn group(&mut self, group: &GroupPlan, req: &Prepared<'_>, trusted: bool) -> Option<Held> {
        match group.match_kind {
            MatchKind::All => {
                for c in &group.plain {
                    if trusted && c.indexed {
                        continue;
                    }
                    if !self.holds(c, req.input(c.input)) {
                        return None;
                    }
                }
                if group.item.is_empty() {
                    return Some(Held(None));
                }
                req.items
                    .iter()
                    .position(|item| {
                        group
                            .item
                            .iter()
                            .all(|c| self.holds(c, item_input(item, c.input)))
                    })
                    .map(|i| Held(Some(i)))
            }
            MatchKind::Any => {
                let item = req.items.iter().position(|item| {
                    group
                        .item
                        .iter()
                        .any(|c| self.holds(c, item_input(item, c.input)))
                });
                let plain = group
                    .plain
                    .iter()
                    .any(|c| self.holds(c, req.input(c.input)));
                (plain || item.is_some()).then_some(Held(item))
            }
            // Validation rejects unknown kinds; never holding is the safe reading.
            MatchKind::Unknown(_) => None,
        }
    }

    /// Whether a rule's conditions hold (the validity window is checked by
    /// [`RulePlan::valid_at`]), and with which cart item: the one that satisfied
    /// its first group with item conditions.
    /// `trusted`: see [`Evaluator::group`].
    pub(crate) fn rule(
        &mut self,
        rule: &RulePlan,
        req: &Prepared<'_>,
        trusted: bool,
    ) -> Option<Held> {
        let mut matched = None;
        for group in &rule.groups {
            let held = self.group(group, req, trusted)?;
            if matched.is_none() && !group.item.is_empty() {
                matched = Some(held);
            }
        }
        Some(matched.unwrap_or(Held(None)))
    }
}

/// An explanation skeleton for a campaign.
pub(crate) fn explanation(cc: &CompiledCampaign, reason: &str, message: String) -> Explanation {
    Explanation {
        campaign_id: cc.campaign.id,
        ref_code: cc.campaign.ref_code.clone(),
        reason: reason.to_owned(),
        rule_id: None,
        field: None,
        attribute: None,
        op: None,
        expected: None,
        actual: None,
        quota_key: None,
        suppressed_by: None,
        message,
    }
}

/// Why no rule of a campaign fired: the first rule's first failure.
/// `rules` are the campaign's rule plans, in rule order.
pub(crate) fn explain(
    cc: &CompiledCampaign,
    rules: &[RulePlan],
    req: &Prepared<'_>,
    now: DateTime<Utc>,
) -> Explanation {
    let Some(rule) = rules.first() else {
        return explanation(cc, "no_rules", "the campaign has no rules".to_owned());
    };
    let r = rule.rule as usize;
    let source = &cc.campaign.rules[r];
    if !rule.valid_at(now) {
        return Explanation {
            rule_id: Some(source.id.clone()),
            field: Some(format!("rules[{r}]")),
            ..explanation(
                cc,
                "rule_not_valid_now",
                "the rule is outside its validFrom/validTo window".to_owned(),
            )
        };
    }
    let mut ev = Evaluator::default();
    for (g, group) in rule.groups.iter().enumerate() {
        if ev.group(group, req, false).is_some() {
            continue;
        }
        let gpath = format!("rules[{r}].when[{g}]");
        let conds = &source.when[g].conditions;
        let failed = |c: usize, actual: Option<String>, message: String| Explanation {
            rule_id: Some(source.id.clone()),
            field: Some(format!("{gpath}.conditions[{c}]")),
            attribute: Some(conds[c].attribute.clone()),
            op: Some(conds[c].op.as_str().to_owned()),
            expected: Some(conds[c].value.clone()),
            actual,
            ..explanation(cc, "condition_failed", message)
        };
        if group.match_kind != MatchKind::All {
            let message = if conds.is_empty() {
                "the ANY group has no conditions, so it never holds"
            } else {
                "none of the conditions of the ANY group holds"
            };
            return Explanation {
                rule_id: Some(source.id.clone()),
                field: Some(gpath),
                ..explanation(cc, "condition_failed", message.to_owned())
            };
        }
        for c in &group.plain {
            let input = req.input(c.input);
            if !ev.holds(c, input) {
                let actual = input.describe();
                return failed(
                    c.position,
                    actual.clone(),
                    describe_failure(&conds[c.position], actual.as_deref()),
                );
            }
        }
        for c in &group.item {
            if !req
                .items
                .iter()
                .any(|item| ev.holds(c, item_input(item, c.input)))
            {
                let values: Vec<String> = req
                    .items
                    .iter()
                    .filter_map(|item| item_input(item, c.input).describe())
                    .collect();
                let actual = (!values.is_empty()).then(|| values.join("; "));
                let message = if req.items.is_empty() {
                    "the cart has no items".to_owned()
                } else {
                    format!("no cart item satisfies {}", describe(&conds[c.position]))
                };
                return failed(c.position, actual, message);
            }
        }
        return Explanation {
            rule_id: Some(source.id.clone()),
            field: Some(gpath),
            ..explanation(
                cc,
                "condition_failed",
                "each item condition is met by some cart item, but no single item meets all of them".to_owned(),
            )
        };
    }
    // The first rule fired: the campaign failed for another reason (formulas).
    explanation(cc, "no_rule_fired", "no rule produced an action".to_owned())
}

fn describe(c: &Condition) -> String {
    format!("{} {} {:?} ({})", c.attribute, c.op, c.value, c.value_type)
}

fn describe_failure(c: &Condition, actual: Option<&str>) -> String {
    match actual {
        None => format!("{} is missing, so {} cannot hold", c.attribute, describe(c)),
        Some(a) => format!(
            "{} is {a:?}, which does not satisfy {}",
            c.attribute,
            describe(c)
        ),
    }
}
