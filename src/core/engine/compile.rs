//! Compiling a campaign: every value parsed once, every problem reported.

use std::borrow::Cow;
use std::sync::Arc;

use chrono_tz::Tz;
use rust_decimal::Decimal;

use crate::core::campaign::{
    AllocateMethod, Campaign, CampaignRef, CapScope, ConditionType, MatchKind, Rule, RuleRef, Then,
    ThenOperator, DEFAULT_AMOUNT_ATTRIBUTE,
};
use crate::core::condition::{self, CompiledCondition};
use crate::core::error::ErrorCode;
use crate::core::error::FieldError;
use crate::core::formula::Formula;
use crate::core::limits::{
    MAX_BENEFITS_PER_RULE, MAX_CONDITIONS_PER_RULE, MAX_DATA_PER_BENEFIT, MAX_GROUPS_PER_RULE,
    MAX_QUOTAS_PER_CAMPAIGN, MAX_RULES_PER_CAMPAIGN, MAX_TEXT_LEN,
};
use crate::core::template::{BoundKey, Template};

/// A campaign compiled for evaluation. Immutable; built once per saved
/// version of the campaign.
#[derive(Debug, Clone)]
pub struct CompiledCampaign {
    /// The campaign as saved.
    pub campaign: Campaign,
    /// The campaign as a search response names it, built once.
    pub(crate) wire: Arc<CampaignRef>,
    pub(crate) rules: Vec<CompiledRule>,
    pub(crate) quotas: Vec<CompiledQuota>,
    /// The zone of the calendar names (`${day}`, `${week}`, …): the
    /// campaign's `timeZone`, else the project's (see
    /// [`in_zone`](Self::in_zone)), else UTC.
    pub(crate) zone: Tz,
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledRule {
    /// The rule as a search response names it, built once.
    pub(crate) wire: Arc<RuleRef>,
    pub(crate) groups: Vec<CompiledGroup>,
    pub(crate) benefits: Vec<CompiledBenefit>,
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledGroup {
    pub(crate) match_kind: MatchKind,
    /// The conditions, in group order; shared with the engine's rule plans.
    pub(crate) conditions: Vec<Arc<CompiledCondition>>,
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledBenefit {
    /// The benefit as saved; what search returns of a static one.
    pub(crate) then: Arc<Then>,
    pub(crate) values: Vec<Value>,
    /// No formula and no `${name}`: the benefit evaluates to `then` itself,
    /// so search can lend it instead of building a copy per match.
    pub(crate) is_static: bool,
}

#[derive(Debug, Clone)]
pub(crate) enum Value {
    Text(Template),
    Formula(Formula),
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledQuota {
    /// The key, with the names the campaign fixes ([`fixed`]) rendered.
    pub(crate) key: BoundKey,
    pub(crate) limit: Decimal,
    pub(crate) value_field: Option<String>,
    pub(crate) window: Option<crate::core::campaign::QuotaWindow>,
}

impl CompiledCampaign {
    /// Compiles a campaign, reporting every problem of its rules and quotas
    /// with its field path.
    pub fn compile(campaign: &Campaign) -> Result<CompiledCampaign, Vec<FieldError>> {
        let mut problems = Vec::new();
        if campaign.rules.len() > MAX_RULES_PER_CAMPAIGN {
            problems.push(FieldError::new(
                "rules",
                ErrorCode::TooMany,
                format!("a campaign has at most {MAX_RULES_PER_CAMPAIGN} rules"),
            ));
        }
        if campaign.quotas.len() > MAX_QUOTAS_PER_CAMPAIGN {
            problems.push(FieldError::new(
                "quotas",
                ErrorCode::TooMany,
                format!("a campaign has at most {MAX_QUOTAS_PER_CAMPAIGN} quotas"),
            ));
        }
        let rules: Vec<CompiledRule> = campaign
            .rules
            .iter()
            .take(MAX_RULES_PER_CAMPAIGN)
            .enumerate()
            .filter_map(|(i, r)| compile_rule(r, &format!("rules[{i}]"), &mut problems))
            .collect();
        let quotas: Vec<CompiledQuota> = campaign
            .quotas
            .iter()
            .take(MAX_QUOTAS_PER_CAMPAIGN)
            .enumerate()
            .filter_map(|(i, q)| {
                let path = format!("quotas[{i}]");
                if q.value < Decimal::ZERO {
                    problems.push(FieldError::new(
                        format!("{path}.value"),
                        ErrorCode::InvalidNumber,
                        "the limit must not be negative",
                    ));
                }
                if q.key.trim().is_empty() {
                    problems.push(FieldError::new(
                        format!("{path}.key"),
                        ErrorCode::Required,
                        "key is required",
                    ));
                    return None;
                }
                if q.key.len() > MAX_TEXT_LEN {
                    problems.push(FieldError::new(
                        format!("{path}.key"),
                        ErrorCode::TooLong,
                        format!("at most {MAX_TEXT_LEN} bytes"),
                    ));
                    return None;
                }
                match Template::parse(&q.key) {
                    Ok(key) => Some(CompiledQuota {
                        key: key.bind_key(&|name| fixed(campaign, name)),
                        limit: q.value,
                        value_field: q.value_field.clone().filter(|f| !f.trim().is_empty()),
                        // A window that does not parse is reported by
                        // validation (`invalid_quota_window`).
                        window: q.window.as_deref().and_then(|w| w.parse().ok()),
                    }),
                    Err(e) => {
                        let mut problem =
                            FieldError::new(format!("{path}.key"), e.code(), e.to_string());
                        problem.span = e.span().map(Into::into);
                        problems.push(problem);
                        None
                    }
                }
            })
            .collect();
        let zone = match campaign.time_zone.as_deref() {
            None => Tz::UTC,
            Some(name) => name.parse::<Tz>().unwrap_or_else(|_| {
                problems.push(FieldError::new(
                    "timeZone",
                    ErrorCode::InvalidTimeZone,
                    format!(
                        "{name:?} is not an IANA time zone name (Europe/Berlin, Asia/Bangkok, UTC)"
                    ),
                ));
                Tz::UTC
            }),
        };
        if problems.is_empty() {
            Ok(CompiledCampaign {
                wire: Arc::new(campaign_ref(campaign)),
                campaign: campaign.clone(),
                rules,
                quotas,
                zone,
            })
        } else {
            Err(problems)
        }
    }
}

/// The reserved names whose value the campaign alone fixes: its code, its
/// id, and `channel` when it runs on one channel (else the request's).
/// Reserved names come first in a quota key, so these are rendered into
/// the key once, when the campaign is compiled.
pub(crate) fn fixed<'c>(c: &'c Campaign, name: &str) -> Option<Cow<'c, str>> {
    match name {
        "campaignCode" => Some(Cow::Borrowed(c.ref_code.as_str())),
        "campaignId" => Some(Cow::Owned(c.id.to_string())),
        "channel" => c.channel.as_deref().map(Cow::Borrowed),
        _ => None,
    }
}

/// The campaign as a search response names it.
fn campaign_ref(c: &Campaign) -> CampaignRef {
    CampaignRef {
        id: c.id,
        name: c.name.clone(),
        start_date: c.start_date,
        end_date: c.end_date,
        ref_code: c.ref_code.clone(),
        image_url: c.image_url.clone(),
    }
}

impl CompiledCampaign {
    /// The campaign with `zone` (the project's time zone) for its calendar
    /// names, unless it names its own `timeZone`.
    #[must_use]
    pub fn in_zone(mut self, zone: Tz) -> Self {
        if self.campaign.time_zone.is_none() {
            self.zone = zone;
        }
        self
    }

    /// The zone of the campaign's calendar names.
    pub fn zone(&self) -> Tz {
        self.zone
    }
}

fn compile_rule(rule: &Rule, path: &str, problems: &mut Vec<FieldError>) -> Option<CompiledRule> {
    let before = problems.len();
    if !rule.then_operator.is_known() {
        problems.push(FieldError::new(
            format!("{path}.thenOperator"),
            ErrorCode::InvalidEnum,
            format!(
                "unknown thenOperator {:?}; expected one of {}",
                rule.then_operator.as_str(),
                ThenOperator::expected()
            ),
        ));
    }
    if let (Some(from), Some(to)) = (rule.valid_from, rule.valid_to) {
        if from >= to {
            problems.push(FieldError::new(
                format!("{path}.validTo"),
                ErrorCode::InvalidPeriod,
                "validTo must be after validFrom",
            ));
        }
    }
    if rule.when.len() > MAX_GROUPS_PER_RULE {
        problems.push(FieldError::new(
            format!("{path}.when"),
            ErrorCode::TooMany,
            format!("a rule has at most {MAX_GROUPS_PER_RULE} when groups"),
        ));
    }
    let conditions: usize = rule.when.iter().map(|g| g.conditions.len()).sum();
    if conditions > MAX_CONDITIONS_PER_RULE {
        problems.push(FieldError::new(
            format!("{path}.when"),
            ErrorCode::TooMany,
            format!("a rule has at most {MAX_CONDITIONS_PER_RULE} conditions over all its groups"),
        ));
    }
    if rule.then.is_empty() {
        problems.push(FieldError::new(
            format!("{path}.then"),
            ErrorCode::Required,
            "a rule needs at least one benefit",
        ));
    }
    if rule.then.len() > MAX_BENEFITS_PER_RULE {
        problems.push(FieldError::new(
            format!("{path}.then"),
            ErrorCode::TooMany,
            format!("a rule has at most {MAX_BENEFITS_PER_RULE} benefits"),
        ));
    }
    let groups = if rule.when.len() <= MAX_GROUPS_PER_RULE && conditions <= MAX_CONDITIONS_PER_RULE
    {
        compile_groups(rule, path, problems)
    } else {
        Vec::new()
    };
    let benefits = compile_benefits(rule, path, problems);
    (problems.len() == before).then(|| CompiledRule {
        wire: Arc::new(RuleRef {
            id: rule.id.clone(),
            name: rule.name.clone(),
            then_operator: rule.then_operator.clone(),
        }),
        groups,
        benefits,
    })
}

fn compile_groups(rule: &Rule, path: &str, problems: &mut Vec<FieldError>) -> Vec<CompiledGroup> {
    let mut groups = Vec::with_capacity(rule.when.len());
    for (g, group) in rule.when.iter().enumerate() {
        let gpath = format!("{path}.when[{g}]");
        if !group.match_kind.is_known() {
            problems.push(FieldError::new(
                format!("{gpath}.match"),
                ErrorCode::InvalidEnum,
                format!(
                    "unknown match {:?}; expected one of {}",
                    group.match_kind.as_str(),
                    MatchKind::expected()
                ),
            ));
        }
        let mut conditions = Vec::with_capacity(group.conditions.len());
        for (c, cond) in group.conditions.iter().enumerate() {
            match condition::compile(cond, &format!("{gpath}.conditions[{c}]")) {
                Ok(cc) => conditions.push(Arc::new(cc)),
                Err(e) => problems.extend(e),
            }
        }
        groups.push(CompiledGroup {
            match_kind: group.match_kind.clone(),
            conditions,
        });
    }
    groups
}

fn compile_benefits(
    rule: &Rule,
    path: &str,
    problems: &mut Vec<FieldError>,
) -> Vec<CompiledBenefit> {
    let mut benefits = Vec::with_capacity(rule.then.len());
    for (b, then) in rule.then.iter().take(MAX_BENEFITS_PER_RULE).enumerate() {
        let bpath = format!("{path}.then[{b}]");
        if then.data.len() > MAX_DATA_PER_BENEFIT {
            problems.push(FieldError::new(
                format!("{bpath}.data"),
                ErrorCode::TooMany,
                format!("a benefit has at most {MAX_DATA_PER_BENEFIT} data items"),
            ));
            continue;
        }
        let mut values = Vec::with_capacity(then.data.len());
        for (d, item) in then.data.iter().enumerate() {
            let dpath = format!("{bpath}.data[{d}]");
            if item.attribute.trim().is_empty() {
                problems.push(FieldError::new(
                    format!("{dpath}.attribute"),
                    ErrorCode::Required,
                    "attribute is required",
                ));
            }
            if item.value.len() > MAX_TEXT_LEN {
                problems.push(FieldError::new(
                    format!("{dpath}.value"),
                    ErrorCode::TooLong,
                    format!("at most {MAX_TEXT_LEN} bytes"),
                ));
                continue;
            }
            if item.is_formula {
                match Formula::parse(&item.value) {
                    Ok(f) => values.push(Value::Formula(f)),
                    Err(e) => problems.push(
                        FieldError::new(format!("{dpath}.value"), e.code(), e.to_string())
                            .with_span(e.span()),
                    ),
                }
            } else {
                match Template::parse(&item.value) {
                    Ok(t) => values.push(Value::Text(t)),
                    Err(e) => {
                        let mut problem =
                            FieldError::new(format!("{dpath}.value"), e.code(), e.to_string());
                        problem.span = e.span().map(Into::into);
                        problems.push(problem);
                    }
                }
            }
        }
        check_money(rule, then, &bpath, problems);
        let is_static = then.cap.is_none()
            && then.allocate.is_none()
            && values.len() == then.data.len()
            && values
                .iter()
                .all(|v| matches!(v, Value::Text(t) if !t.has_placeholders()));
        benefits.push(CompiledBenefit {
            then: Arc::new(then.clone()),
            values,
            is_static,
        });
    }
    benefits
}

/// Checks a benefit's cap and allocation: known values, a non-negative
/// `max`, a data item to apply them to, and an `ITEM` scope only on a rule
/// that matches a cart item.
fn check_money(rule: &Rule, then: &Then, bpath: &str, problems: &mut Vec<FieldError>) {
    if let Some(method) = &then.allocate {
        if !method.is_known() {
            problems.push(FieldError::new(
                format!("{bpath}.allocate"),
                ErrorCode::InvalidEnum,
                format!(
                    "unknown allocate {:?}; expected one of {}",
                    method.as_str(),
                    AllocateMethod::expected()
                ),
            ));
        }
    }
    let Some(cap) = &then.cap else {
        if then.allocate.is_some()
            && !then
                .data
                .iter()
                .any(|d| d.attribute == DEFAULT_AMOUNT_ATTRIBUTE)
        {
            problems.push(FieldError::new(
                format!("{bpath}.allocate"),
                ErrorCode::UnknownAttribute,
                format!("an allocated benefit needs a data item {DEFAULT_AMOUNT_ATTRIBUTE:?} (or a cap naming another one)"),
            ));
        }
        return;
    };
    if cap.max.is_some_and(|m| m < Decimal::ZERO) {
        problems.push(FieldError::new(
            format!("{bpath}.cap.max"),
            ErrorCode::InvalidNumber,
            "a cap must not be negative",
        ));
    }
    if !then.data.iter().any(|d| d.attribute == cap.attribute()) {
        problems.push(FieldError::new(
            format!("{bpath}.cap.attribute"),
            ErrorCode::UnknownAttribute,
            format!("the benefit has no data item {:?} to cap", cap.attribute()),
        ));
    }
    match &cap.scope {
        Some(CapScope::Unknown(s)) => problems.push(FieldError::new(
            format!("{bpath}.cap.scope"),
            ErrorCode::InvalidEnum,
            format!(
                "unknown scope {s:?}; expected one of {}",
                CapScope::expected()
            ),
        )),
        Some(CapScope::Item)
            if !rule
                .when
                .iter()
                .flat_map(|g| &g.conditions)
                .any(|c| c.kind == ConditionType::CartItem) =>
        {
            problems.push(FieldError::new(
                format!("{bpath}.cap.scope"),
                ErrorCode::InvalidCapScope,
                "scope ITEM needs a rule with a cartItem condition (the line it caps by)",
            ));
        }
        _ => {}
    }
}
