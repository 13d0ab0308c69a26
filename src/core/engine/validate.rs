//! Validation of a campaign when it is saved.
//!
//! [`build`] turns a [`CampaignInput`] into a [`Campaign`] and its
//! [`CompiledCampaign`], or fails with ONE validation error listing every
//! problem, each with its field path (`rules[0].when[1].conditions[2].value`).
//! Compiling is the validation of rules and quotas: a campaign that saves is a
//! campaign the engine can run.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::CompiledCampaign;
use crate::core::campaign::{
    Campaign, CampaignInput, CampaignStatus, Stacking, MAX_STATUS_CHANGES,
};
use crate::core::error::ErrorCode;
use crate::core::error::Problems;
use crate::core::limits::{
    MAX_CAMPAIGN_LABEL_LEN, MAX_QUOTA_KEY_LEN, MAX_REF_CODE_LEN, MAX_TEXT_LEN,
};
use crate::Result;

/// Who and when, for the audit fields of a saved campaign.
#[derive(Debug, Clone)]
pub(crate) struct Stamp<'a> {
    pub(crate) project: &'a str,
    pub(crate) actor: &'a str,
    pub(crate) now: DateTime<Utc>,
}

/// Builds and compiles a campaign from its input. `existing` is the stored
/// campaign on update (its id, version, and creation fields are kept).
pub(crate) fn build(
    input: CampaignInput,
    existing: Option<&Campaign>,
    stamp: &Stamp<'_>,
) -> Result<(Campaign, CompiledCampaign)> {
    let mut problems = Problems::new();
    if let Ok(json) = serde_json::to_value(&input) {
        crate::core::wire::find_nul(&json, "", &mut problems);
    }
    check_fields(&input, &mut problems);
    let mut input = input;
    assign_ids(&mut input, &mut problems);
    // Output-only fields of a benefit are never stored.
    for then in input.rules.iter_mut().flat_map(|r| &mut r.then) {
        then.allocation = None;
        then.capped = None;
    }

    let now = stamp.now;
    let campaign = Campaign {
        id: existing.map_or_else(Uuid::new_v4, |e| e.id),
        name: input.name,
        description: input.description,
        image_url: input.image_url,
        start_date: input.start_date.unwrap_or(now),
        end_date: input.end_date.unwrap_or(now),
        ref_code: input.ref_code,
        status: input.status,
        priority: input.priority.unwrap_or(1),
        channel: input.channel.filter(|c| !c.is_empty()),
        group_name: input.group_name,
        stacking: input
            .stacking
            .map(normalize_stacking)
            .filter(|s| !s.is_default()),
        time_zone: input.time_zone.filter(|z| !z.trim().is_empty()),
        status_schedule: {
            let mut schedule = input.status_schedule;
            schedule.sort_by_key(|c| c.at);
            schedule
        },
        quotas: input.quotas.into_iter().map(canonical_window).collect(),
        rules: input.rules,
        project_id: stamp.project.to_owned(),
        version: existing.map_or(1, |e| e.version + 1),
        active: false,
        created_by: existing.map_or_else(|| stamp.actor.to_owned(), |e| e.created_by.clone()),
        last_modified_by: stamp.actor.to_owned(),
        created_date: existing.map_or(now, |e| e.created_date),
        last_modified_date: now,
    };
    let compiled = CompiledCampaign::compile(&campaign);
    if let Err(fields) = &compiled {
        problems.extend(fields.iter().cloned());
    }
    problems.into_result()?;
    let compiled = compiled.map_err(crate::Error::validation)?;
    Ok((campaign.with_active(now), compiled))
}

fn check_text(problems: &mut Problems, field: &str, value: Option<&str>, max: usize) {
    if value.is_some_and(|v| v.len() > max) {
        problems.push(
            field,
            ErrorCode::TooLong,
            format!("{field} is longer than {max} bytes"),
        );
    }
}

/// Formulas that fail on every request (`1 / 0`, `${price} / 0`, an
/// overflow of constants) are refused when saved: 422 at the value, with
/// the formula's error code. (Checked at save only: a campaign stored
/// before still compiles and answers its error per request.)
fn check_constant_formulas(input: &CampaignInput, problems: &mut Problems) {
    for (r, rule) in input.rules.iter().enumerate() {
        for (t, then) in rule.then.iter().enumerate() {
            for (d, item) in then.data.iter().enumerate() {
                if !item.is_formula {
                    continue;
                }
                let Ok(formula) = crate::core::formula::Formula::parse(&item.value) else {
                    continue;
                };
                if let Some(e) = formula.constant_error() {
                    problems.push_at(
                        format!("rules[{r}].then[{t}].data[{d}].value"),
                        e.code(),
                        format!("the formula fails on every request: {e}"),
                        e.span(),
                    );
                }
            }
        }
    }
}

/// A quota with its window in canonical form (`PT24H` saved as `P1D`); a
/// window that does not parse is kept as sent, for validation to report.
fn canonical_window(mut quota: crate::core::campaign::Quota) -> crate::core::campaign::Quota {
    if let Some(w) = &quota.window {
        if let Ok(parsed) = w.parse::<crate::core::campaign::QuotaWindow>() {
            quota.window = Some(parsed.to_string());
        }
    }
    quota
}

/// Quota keys: bounded, and rendering distinct values to distinct keys
/// (docs/quotas.md).
fn check_quota_keys(input: &CampaignInput, problems: &mut Problems) {
    for (i, quota) in input.quotas.iter().enumerate() {
        check_text(
            problems,
            &format!("quotas[{i}].key"),
            Some(&quota.key),
            MAX_QUOTA_KEY_LEN,
        );
        if let Some(window) = &quota.window {
            if let Err(e) = window.parse::<crate::core::campaign::QuotaWindow>() {
                problems.push(
                    format!("quotas[{i}].window"),
                    ErrorCode::InvalidQuotaWindow,
                    e.to_string(),
                );
            }
        }
        let Ok(key) = crate::core::template::Template::parse(&quota.key) else {
            continue;
        };
        if key.has_adjacent_placeholders() {
            problems.push(
                format!("quotas[{i}].key"),
                ErrorCode::QuotaKeyAmbiguous,
                "two placeholders follow each other with no text between: \
                 put a separator between them (`${a}-${b}`) so that distinct \
                 values give distinct keys",
            );
        } else if key.has_placeholders() && key.key_text_has_percent() {
            problems.push(
                format!("quotas[{i}].key"),
                ErrorCode::QuotaKeyAmbiguous,
                "a key with placeholders may not contain `%` in its own text \
                 (`%` escapes characters of substituted values)",
            );
        }
    }
}

/// A schedule holds at most [`MAX_STATUS_CHANGES`] changes, each of a known
/// status, at distinct instants.
fn check_status_schedule(input: &CampaignInput, problems: &mut Problems) {
    let schedule = &input.status_schedule;
    if schedule.len() > MAX_STATUS_CHANGES {
        problems.push(
            "statusSchedule",
            ErrorCode::TooMany,
            format!(
                "at most {MAX_STATUS_CHANGES} status changes may be scheduled, got {}",
                schedule.len()
            ),
        );
    }
    for (i, change) in schedule.iter().enumerate() {
        if !change.status.is_known() {
            problems.push(
                format!("statusSchedule[{i}].status"),
                ErrorCode::InvalidEnum,
                format!(
                    "unknown status {:?}; expected one of {}",
                    change.status.as_str(),
                    CampaignStatus::expected()
                ),
            );
        }
        if schedule[..i].iter().any(|other| other.at == change.at) {
            problems.push(
                format!("statusSchedule[{i}].at"),
                ErrorCode::Duplicate,
                format!(
                    "another status change is scheduled at {}",
                    change
                        .at
                        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
                ),
            );
        }
    }
}

fn check_fields(input: &CampaignInput, problems: &mut Problems) {
    if input.name.trim().is_empty() {
        problems.push("name", ErrorCode::Required, "name is required");
    }
    if input.ref_code.trim().is_empty() {
        problems.push("refCode", ErrorCode::Required, "refCode is required");
    } else if input.ref_code != input.ref_code.trim() {
        problems.push(
            "refCode",
            ErrorCode::InvalidRefCode,
            "refCode must not start or end with whitespace",
        );
    }
    check_text(problems, "refCode", Some(&input.ref_code), MAX_REF_CODE_LEN);
    check_text(problems, "name", Some(&input.name), MAX_TEXT_LEN);
    check_quota_keys(input, problems);
    check_constant_formulas(input, problems);
    check_text(
        problems,
        "description",
        input.description.as_deref(),
        MAX_TEXT_LEN,
    );
    check_text(
        problems,
        "imageUrl",
        input.image_url.as_deref(),
        MAX_TEXT_LEN,
    );
    check_text(
        problems,
        "channel",
        input.channel.as_deref(),
        MAX_CAMPAIGN_LABEL_LEN,
    );
    check_text(
        problems,
        "groupName",
        input.group_name.as_deref(),
        MAX_CAMPAIGN_LABEL_LEN,
    );
    match (input.start_date, input.end_date) {
        (None, _) | (_, None) => {
            if input.start_date.is_none() {
                problems.push("startDate", ErrorCode::Required, "startDate is required");
            }
            if input.end_date.is_none() {
                problems.push("endDate", ErrorCode::Required, "endDate is required");
            }
        }
        (Some(start), Some(end)) if start >= end => {
            problems.push(
                "endDate",
                ErrorCode::InvalidPeriod,
                "endDate must be after startDate",
            );
        }
        _ => {}
    }
    check_status_schedule(input, problems);
    if !input.status.is_known() {
        problems.push(
            "status",
            ErrorCode::InvalidEnum,
            format!(
                "unknown status {:?}; expected one of {}",
                input.status.as_str(),
                CampaignStatus::expected()
            ),
        );
    }
    check_text(
        problems,
        "timeZone",
        input.time_zone.as_deref(),
        MAX_REF_CODE_LEN,
    );
    if let Some(group) = input.stacking.as_ref().and_then(|s| s.group.as_deref()) {
        check_text(problems, "stacking.group", Some(group), MAX_REF_CODE_LEN);
    }
    if input.priority.is_some_and(|p| p < 1) {
        problems.push(
            "priority",
            ErrorCode::InvalidPriority,
            "priority must be 1 (the highest) or more",
        );
    }
}

/// Generates missing rule ids and actionRefs; reports duplicates, which
/// would make redeem's choice ambiguous.
fn assign_ids(input: &mut CampaignInput, problems: &mut Problems) {
    let mut rule_ids = HashSet::new();
    let mut refs = HashSet::new();
    for (r, rule) in input.rules.iter_mut().enumerate() {
        if rule.id.trim().is_empty() {
            rule.id = Uuid::new_v4().to_string();
        }
        if !rule_ids.insert(rule.id.clone()) {
            problems.push(
                format!("rules[{r}].id"),
                ErrorCode::Duplicate,
                format!("rule id {:?} is used twice", rule.id),
            );
        }
        check_text(
            problems,
            &format!("rules[{r}].name"),
            Some(&rule.name),
            MAX_TEXT_LEN,
        );
        for (b, then) in rule.then.iter_mut().enumerate() {
            if then.action_ref.trim().is_empty() {
                then.action_ref = Uuid::new_v4().to_string();
            }
            if then.action_ref.len() > MAX_REF_CODE_LEN {
                problems.push(
                    format!("rules[{r}].then[{b}].actionRef"),
                    ErrorCode::TooLong,
                    format!("actionRef is longer than {MAX_REF_CODE_LEN} bytes"),
                );
            }
            if !refs.insert(then.action_ref.clone()) {
                problems.push(
                    format!("rules[{r}].then[{b}].actionRef"),
                    ErrorCode::Duplicate,
                    format!(
                        "actionRef {:?} is used twice in the campaign",
                        then.action_ref
                    ),
                );
            }
        }
    }
}

/// A stacking group of only whitespace is no group.
fn normalize_stacking(mut s: Stacking) -> Stacking {
    s.group = s.group.filter(|g| !g.trim().is_empty());
    s
}
