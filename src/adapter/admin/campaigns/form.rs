//! The campaign editor's form: a [`Draft`] holds what the person typed, as
//! text, field by field; it converts to and from a [`CampaignInput`], and
//! takes the structural edits (add a rule, remove a condition) that the
//! form submits without JavaScript. Input names are the validator's field
//! paths (`rules[0].when[1].conditions[2].value`), so every error lands
//! beside the input it concerns.

use chrono::FixedOffset;

use crate::adapter::admin::guard::Form;
use crate::adapter::admin::view;
use crate::core::campaign::{
    AllocateMethod, BenefitCap, CampaignInput, CampaignStatus, CapScope, Condition, ConditionType,
    DataItem, MatchKind, Op, Quota, Rule, Stacking, StatusChange, Then, ThenOperator, ValueType,
    WhenGroup,
};
use crate::core::error::ErrorCode;
use crate::core::error::FieldError;

/// A condition as typed.
#[derive(Debug, Clone, Default)]
pub struct CondDraft {
    pub kind: String,
    pub attribute: String,
    pub op: String,
    pub value: String,
    pub value_type: String,
    pub note: String,
    /// Kept as saved (the form carries it hidden).
    pub resolve_action: bool,
}

/// A `when` group as typed.
#[derive(Debug, Clone, Default)]
pub struct GroupDraft {
    pub match_kind: String,
    pub conditions: Vec<CondDraft>,
}

/// A benefit data item as typed.
#[derive(Debug, Clone, Default)]
pub struct DataDraft {
    pub attribute: String,
    pub value: String,
    pub is_formula: bool,
    pub kind: String,
    pub op: String,
    pub value_type: String,
    pub note: String,
    /// Kept as saved (the form carries it hidden).
    pub resolve_action: bool,
}

/// A benefit as typed.
#[derive(Debug, Clone, Default)]
pub struct ThenDraft {
    pub action: String,
    pub action_ref: String,
    pub internal_action: bool,
    pub data: Vec<DataDraft>,
    /// Whether the benefit is capped (a cap may have no field set: it then
    /// bounds the amount by the cart or the matched line only).
    pub capped: bool,
    pub cap_max: String,
    pub cap_scope: String,
    pub cap_attribute: String,
    pub allocate: String,
}

/// A rule as typed.
#[derive(Debug, Clone, Default)]
pub struct RuleDraft {
    pub id: String,
    pub name: String,
    pub description: String,
    pub then_operator: String,
    pub valid_from: String,
    pub valid_to: String,
    pub when: Vec<GroupDraft>,
    pub then: Vec<ThenDraft>,
}

/// A quota as typed.
#[derive(Debug, Clone, Default)]
pub struct QuotaDraft {
    pub id: String,
    pub key: String,
    pub value: String,
    pub value_field: String,
    pub description: String,
    pub window: String,
}

/// A whole campaign as typed.
#[derive(Debug, Clone, Default)]
pub struct Draft {
    pub name: String,
    pub description: String,
    pub image_url: String,
    pub ref_code: String,
    pub start: String,
    pub end: String,
    pub status: String,
    pub priority: String,
    pub channel: String,
    pub group: String,
    pub exclusive: bool,
    pub stacking_group: String,
    pub stop_after: bool,
    pub time_zone: String,
    /// Scheduled status changes, one a line: `<date and time> <STATUS>`.
    pub status_schedule: String,
    pub version: String,
    pub quotas: Vec<QuotaDraft>,
    pub rules: Vec<RuleDraft>,
}

fn opt(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_owned())
}

/// The sorted distinct indices `i` of names `{prefix}[i]…` in the form.
fn indices(form: &Form, prefix: &str) -> Vec<usize> {
    let mut out: Vec<usize> = form
        .0
        .iter()
        .filter_map(|(k, _)| {
            let rest = k.strip_prefix(prefix)?.strip_prefix('[')?;
            rest[..rest.find(']')?].parse().ok()
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

impl Draft {
    /// A new campaign: the interface's defaults (priority 1, enabled, one
    /// rule with one `ALL` group and one benefit).
    pub fn blank() -> Draft {
        Draft {
            status: "ENABLE".into(),
            priority: "1".into(),
            rules: vec![RuleDraft::blank()],
            ..Draft::default()
        }
    }

    /// The draft of a saved (or sent) campaign, times in `offset`.
    pub fn of(c: &CampaignInput, offset: FixedOffset) -> Draft {
        let t = |t: Option<chrono::DateTime<chrono::Utc>>| {
            t.map(|t| view::input_value(t, offset)).unwrap_or_default()
        };
        Draft {
            name: c.name.clone(),
            description: c.description.clone().unwrap_or_default(),
            image_url: c.image_url.clone().unwrap_or_default(),
            ref_code: c.ref_code.clone(),
            start: t(c.start_date),
            end: t(c.end_date),
            status: c.status.as_str().to_owned(),
            priority: c.priority.map(|p| p.to_string()).unwrap_or_default(),
            channel: c.channel.clone().unwrap_or_default(),
            group: c.group_name.clone().unwrap_or_default(),
            exclusive: c.stacking.as_ref().is_some_and(|s| s.exclusive),
            stacking_group: c
                .stacking
                .as_ref()
                .and_then(|s| s.group.clone())
                .unwrap_or_default(),
            stop_after: c.stacking.as_ref().is_some_and(|s| s.stop_after),
            time_zone: c.time_zone.clone().unwrap_or_default(),
            status_schedule: c
                .status_schedule
                .iter()
                .map(|s| format!("{} {}", t(Some(s.at)), s.status))
                .collect::<Vec<_>>()
                .join("\n"),
            version: c.version.map(|v| v.to_string()).unwrap_or_default(),
            quotas: c
                .quotas
                .iter()
                .map(|q| QuotaDraft {
                    id: q.id.clone().unwrap_or_default(),
                    key: q.key.clone(),
                    value: q.value.to_string(),
                    value_field: q.value_field.clone().unwrap_or_default(),
                    description: q.description.clone().unwrap_or_default(),
                    window: q.window.clone().unwrap_or_default(),
                })
                .collect(),
            rules: c
                .rules
                .iter()
                .map(|r| RuleDraft {
                    id: r.id.clone(),
                    name: r.name.clone(),
                    description: r.description.clone().unwrap_or_default(),
                    then_operator: r.then_operator.as_str().to_owned(),
                    valid_from: t(r.valid_from),
                    valid_to: t(r.valid_to),
                    when: r
                        .when
                        .iter()
                        .map(|g| GroupDraft {
                            match_kind: g.match_kind.as_str().to_owned(),
                            conditions: g
                                .conditions
                                .iter()
                                .map(|c| CondDraft {
                                    kind: c.kind.as_str().to_owned(),
                                    attribute: c.attribute.clone(),
                                    op: c.op.as_str().to_owned(),
                                    value: c.value.clone(),
                                    value_type: c.value_type.as_str().to_owned(),
                                    note: c.note.clone().unwrap_or_default(),
                                    resolve_action: c.resolve_action,
                                })
                                .collect(),
                        })
                        .collect(),
                    then: r
                        .then
                        .iter()
                        .map(|b| ThenDraft {
                            action: b.action.clone().unwrap_or_default(),
                            action_ref: b.action_ref.clone(),
                            internal_action: b.internal_action,
                            capped: b.cap.is_some(),
                            cap_max: b
                                .cap
                                .as_ref()
                                .and_then(|c| c.max)
                                .map(|m| m.to_string())
                                .unwrap_or_default(),
                            cap_scope: b
                                .cap
                                .as_ref()
                                .and_then(|c| c.scope.as_ref())
                                .map(|s| s.as_str().to_owned())
                                .unwrap_or_default(),
                            cap_attribute: b
                                .cap
                                .as_ref()
                                .and_then(|c| c.attribute.clone())
                                .unwrap_or_default(),
                            allocate: b
                                .allocate
                                .as_ref()
                                .map(|a| a.as_str().to_owned())
                                .unwrap_or_default(),
                            data: b
                                .data
                                .iter()
                                .map(|d| DataDraft {
                                    attribute: d.attribute.clone(),
                                    value: d.value.clone(),
                                    is_formula: d.is_formula,
                                    kind: d.kind.clone().unwrap_or_default(),
                                    op: d.op.clone().unwrap_or_default(),
                                    value_type: d.value_type.clone().unwrap_or_default(),
                                    note: d.note.clone().unwrap_or_default(),
                                    resolve_action: d.resolve_action,
                                })
                                .collect(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// The draft the form holds.
    pub fn from_form(form: &Form) -> Draft {
        let f = |k: &str| form.text(k).to_owned();
        let on = |k: &str| matches!(form.get(k), Some("on" | "true"));
        Draft {
            name: f("name"),
            description: f("description"),
            image_url: f("imageUrl"),
            ref_code: f("refCode"),
            start: f("startDate"),
            end: f("endDate"),
            status: f("status"),
            priority: f("priority"),
            channel: f("channel"),
            group: f("groupName"),
            exclusive: on("stacking.exclusive"),
            stacking_group: f("stacking.group"),
            stop_after: on("stacking.stopAfter"),
            time_zone: f("timeZone"),
            status_schedule: f("statusSchedule"),
            version: f("version"),
            quotas: indices(form, "quotas")
                .into_iter()
                .map(|i| {
                    let p = format!("quotas[{i}]");
                    QuotaDraft {
                        id: f(&format!("{p}.id")),
                        key: f(&format!("{p}.key")),
                        value: f(&format!("{p}.value")),
                        value_field: f(&format!("{p}.valueField")),
                        description: f(&format!("{p}.description")),
                        window: f(&format!("{p}.window")),
                    }
                })
                .collect(),
            rules: indices(form, "rules")
                .into_iter()
                .map(|r| {
                    let rp = format!("rules[{r}]");
                    RuleDraft {
                        id: f(&format!("{rp}.id")),
                        name: f(&format!("{rp}.name")),
                        description: f(&format!("{rp}.description")),
                        then_operator: f(&format!("{rp}.thenOperator")),
                        valid_from: f(&format!("{rp}.validFrom")),
                        valid_to: f(&format!("{rp}.validTo")),
                        when: indices(form, &format!("{rp}.when"))
                            .into_iter()
                            .map(|g| {
                                let gp = format!("{rp}.when[{g}]");
                                GroupDraft {
                                    match_kind: f(&format!("{gp}.match")),
                                    conditions: indices(form, &format!("{gp}.conditions"))
                                        .into_iter()
                                        .map(|c| {
                                            let cp = format!("{gp}.conditions[{c}]");
                                            CondDraft {
                                                kind: f(&format!("{cp}.type")),
                                                attribute: f(&format!("{cp}.attribute")),
                                                op: f(&format!("{cp}.op")),
                                                value: f(&format!("{cp}.value")),
                                                value_type: f(&format!("{cp}.valueType")),
                                                note: f(&format!("{cp}.note")),
                                                resolve_action: on(&format!("{cp}.resolveAction")),
                                            }
                                        })
                                        .collect(),
                                }
                            })
                            .collect(),
                        then: indices(form, &format!("{rp}.then"))
                            .into_iter()
                            .map(|b| {
                                let bp = format!("{rp}.then[{b}]");
                                ThenDraft {
                                    action: f(&format!("{bp}.action")),
                                    action_ref: f(&format!("{bp}.actionRef")),
                                    internal_action: on(&format!("{bp}.internalAction")),
                                    capped: on(&format!("{bp}.cap")),
                                    cap_max: f(&format!("{bp}.cap.max")),
                                    cap_scope: f(&format!("{bp}.cap.scope")),
                                    cap_attribute: f(&format!("{bp}.cap.attribute")),
                                    allocate: f(&format!("{bp}.allocate")),
                                    data: indices(form, &format!("{bp}.data"))
                                        .into_iter()
                                        .map(|d| {
                                            let dp = format!("{bp}.data[{d}]");
                                            DataDraft {
                                                attribute: f(&format!("{dp}.attribute")),
                                                value: f(&format!("{dp}.value")),
                                                is_formula: on(&format!("{dp}.isFormula")),
                                                kind: f(&format!("{dp}.type")),
                                                op: f(&format!("{dp}.op")),
                                                value_type: f(&format!("{dp}.valueType")),
                                                note: f(&format!("{dp}.note")),
                                                resolve_action: on(&format!("{dp}.resolveAction")),
                                            }
                                        })
                                        .collect(),
                                }
                            })
                            .collect(),
                    }
                })
                .collect(),
        }
    }

    /// The campaign input, and the problems of turning text into numbers
    /// and times (each at its field; such a field is left out of the input
    /// so that the validator still judges everything else).
    pub fn to_input(&self, offset: FixedOffset) -> (CampaignInput, Vec<FieldError>) {
        let mut problems = Vec::new();
        let mut time = |field: &str, s: &str| match view::parse_input(s, offset) {
            Ok(t) => t,
            Err(m) => {
                problems.push(FieldError::new(field, ErrorCode::InvalidTimestamp, m));
                None
            }
        };
        let start_date = time("startDate", &self.start);
        let end_date = time("endDate", &self.end);
        let mut schedule_problems = Vec::new();
        let status_schedule: Vec<StatusChange> = self
            .status_schedule
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .filter_map(|line| {
                let Some((at, status)) = line.rsplit_once(char::is_whitespace) else {
                    schedule_problems.push(FieldError::new(
                        "statusSchedule",
                        ErrorCode::InvalidTimestamp,
                        format!("{line:?}: expected a date and time, then ENABLE or DISABLE"),
                    ));
                    return None;
                };
                let status = CampaignStatus::parse(status.trim());
                if !status.is_known() {
                    schedule_problems.push(FieldError::new(
                        "statusSchedule",
                        ErrorCode::InvalidEnum,
                        format!("{line:?}: the status is ENABLE or DISABLE"),
                    ));
                    return None;
                }
                time("statusSchedule", at).map(|at| StatusChange { at, status })
            })
            .collect();
        let mut cap_problems = Vec::new();
        let rules: Vec<Rule> = self
            .rules
            .iter()
            .enumerate()
            .map(|(r, rule)| Rule {
                id: rule.id.trim().to_owned(),
                name: rule.name.clone(),
                description: opt(&rule.description),
                when: rule
                    .when
                    .iter()
                    .map(|g| WhenGroup {
                        match_kind: MatchKind::parse(&g.match_kind),
                        conditions: g
                            .conditions
                            .iter()
                            .map(|c| Condition {
                                kind: ConditionType::parse(&c.kind),
                                attribute: c.attribute.trim().to_owned(),
                                op: Op::parse(&c.op),
                                value: c.value.clone(),
                                value_type: ValueType::parse(&c.value_type),
                                note: opt(&c.note),
                                resolve_action: c.resolve_action,
                            })
                            .collect(),
                    })
                    .collect(),
                then_operator: ThenOperator::parse(&rule.then_operator),
                then: rule
                    .then
                    .iter()
                    .enumerate()
                    .map(|(b_index, b)| Then {
                        cap: b.cap(&format!("rules[{r}].then[{b_index}]"), &mut cap_problems),
                        allocate: opt(&b.allocate).map(|a| AllocateMethod::parse(&a)),
                        allocation: None,
                        capped: None,
                        action: opt(&b.action),
                        internal_action: b.internal_action,
                        action_ref: b.action_ref.trim().to_owned(),
                        data: b
                            .data
                            .iter()
                            .map(|d| DataItem {
                                attribute: d.attribute.trim().to_owned(),
                                value: d.value.clone(),
                                kind: opt(&d.kind),
                                op: opt(&d.op),
                                value_type: opt(&d.value_type),
                                note: opt(&d.note),
                                resolve_action: d.resolve_action,
                                is_formula: d.is_formula,
                            })
                            .collect(),
                    })
                    .collect(),
                valid_from: time(&format!("rules[{r}].validFrom"), &rule.valid_from),
                valid_to: time(&format!("rules[{r}].validTo"), &rule.valid_to),
            })
            .collect();
        problems.extend(cap_problems);
        problems.extend(schedule_problems);
        let priority = match self.priority.trim() {
            "" => None,
            p => {
                let n = p.parse::<i32>().ok();
                if n.is_none() {
                    problems.push(FieldError::new(
                        "priority",
                        ErrorCode::InvalidPriority,
                        "priority is a whole number, 1 (the highest) or more",
                    ));
                }
                n
            }
        };
        let quotas = self
            .quotas
            .iter()
            .enumerate()
            .filter_map(|(i, q)| {
                let value = crate::core::wire::parse_decimal(q.value.trim());
                if value.is_none() {
                    problems.push(FieldError::new(
                        format!("quotas[{i}].value"),
                        ErrorCode::InvalidNumber,
                        "the limit is a number (100, or 2500.50 when it sums a value field)",
                    ));
                }
                Some(Quota {
                    id: opt(&q.id),
                    key: q.key.trim().to_owned(),
                    value: value?,
                    value_field: opt(&q.value_field),
                    description: opt(&q.description),
                    window: opt(&q.window),
                })
            })
            .collect();
        let input = CampaignInput {
            name: self.name.trim().to_owned(),
            description: opt(&self.description),
            image_url: opt(&self.image_url),
            start_date,
            end_date,
            ref_code: self.ref_code.trim().to_owned(),
            status: if self.status.is_empty() {
                CampaignStatus::Enable
            } else {
                CampaignStatus::parse(&self.status)
            },
            priority,
            channel: opt(&self.channel),
            group_name: opt(&self.group),
            stacking: Some(Stacking {
                exclusive: self.exclusive,
                group: opt(&self.stacking_group),
                stop_after: self.stop_after,
            })
            .filter(|s| !s.is_default()),
            time_zone: opt(&self.time_zone),
            status_schedule,
            quotas,
            rules,
            version: self.version.trim().parse().ok(),
        };
        (input, problems)
    }

    /// Applies a structural edit named by the form's `op` button
    /// (`add-condition:0:1`, `remove-rule:2`, …). Unknown or out-of-range
    /// edits change nothing.
    pub fn apply(&mut self, op: &str) {
        fn rule(d: &mut Draft, i: usize) -> Option<&mut RuleDraft> {
            d.rules.get_mut(i)
        }
        let mut parts = op.split(':');
        let verb = parts.next().unwrap_or_default();
        let n: Vec<usize> = parts.filter_map(|p| p.parse().ok()).collect();
        match (verb, n.as_slice()) {
            ("add-rule", []) => self.rules.push(RuleDraft::blank()),
            ("remove-rule", [r]) if *r < self.rules.len() => {
                self.rules.remove(*r);
            }
            ("add-quota", []) => self.quotas.push(QuotaDraft {
                key: "${campaignCode}-${userId}".into(),
                value: "1".into(),
                ..QuotaDraft::default()
            }),
            ("remove-quota", [q]) if *q < self.quotas.len() => {
                self.quotas.remove(*q);
            }
            ("add-group", [r]) => {
                if let Some(rule) = rule(self, *r) {
                    rule.when.push(GroupDraft::blank());
                }
            }
            ("remove-group", [r, g]) => {
                if let Some(rule) = rule(self, *r).filter(|x| *g < x.when.len()) {
                    rule.when.remove(*g);
                }
            }
            ("add-condition", [r, g]) => {
                if let Some(group) = rule(self, *r).and_then(|x| x.when.get_mut(*g)) {
                    group.conditions.push(CondDraft::blank());
                }
            }
            ("remove-condition", [r, g, c]) => {
                if let Some(group) = rule(self, *r)
                    .and_then(|x| x.when.get_mut(*g))
                    .filter(|x| *c < x.conditions.len())
                {
                    group.conditions.remove(*c);
                }
            }
            ("add-benefit", [r]) => {
                if let Some(rule) = rule(self, *r) {
                    rule.then.push(ThenDraft::blank());
                }
            }
            ("remove-benefit", [r, b]) => {
                if let Some(rule) = rule(self, *r).filter(|x| *b < x.then.len()) {
                    rule.then.remove(*b);
                }
            }
            ("add-data", [r, b]) => {
                if let Some(then) = rule(self, *r).and_then(|x| x.then.get_mut(*b)) {
                    then.data.push(DataDraft::default());
                }
            }
            ("remove-data", [r, b, d]) => {
                if let Some(then) = rule(self, *r)
                    .and_then(|x| x.then.get_mut(*b))
                    .filter(|x| *d < x.data.len())
                {
                    then.data.remove(*d);
                }
            }
            _ => {}
        }
    }
}

impl RuleDraft {
    fn blank() -> RuleDraft {
        RuleDraft {
            then_operator: "AND".into(),
            when: vec![GroupDraft::blank()],
            then: vec![ThenDraft::blank()],
            ..RuleDraft::default()
        }
    }
}

impl GroupDraft {
    fn blank() -> GroupDraft {
        GroupDraft {
            match_kind: "ALL".into(),
            conditions: vec![CondDraft::blank()],
        }
    }
}

impl CondDraft {
    fn blank() -> CondDraft {
        CondDraft {
            kind: "cart".into(),
            attribute: "totalPrice".into(),
            op: "gte".into(),
            value_type: "NUMBER".into(),
            ..CondDraft::default()
        }
    }
}

impl ThenDraft {
    /// The benefit's cap: present when the box is ticked or a cap field is
    /// filled in; a `max` that is not a number is a problem at its field.
    fn cap(&self, path: &str, problems: &mut Vec<FieldError>) -> Option<BenefitCap> {
        let any = [&self.cap_max, &self.cap_scope, &self.cap_attribute]
            .iter()
            .any(|f| !f.trim().is_empty());
        if !self.capped && !any {
            return None;
        }
        let max = opt(&self.cap_max).and_then(|m| {
            let n = crate::core::wire::parse_decimal(&m);
            if n.is_none() {
                problems.push(FieldError::new(
                    format!("{path}.cap.max"),
                    ErrorCode::InvalidNumber,
                    "the cap is an amount (50, or 12.50)",
                ));
            }
            n
        });
        Some(BenefitCap {
            attribute: opt(&self.cap_attribute),
            max,
            scope: opt(&self.cap_scope).map(|s| CapScope::parse(&s)),
        })
    }

    fn blank() -> ThenDraft {
        ThenDraft {
            action: "DISCOUNT".into(),
            data: vec![DataDraft {
                attribute: "amount".into(),
                ..DataDraft::default()
            }],
            ..ThenDraft::default()
        }
    }
}

#[cfg(test)]
#[path = "form_tests.rs"]
mod tests;
