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

use super::model::{Campaign, CampaignInput, CampaignStatus, Stacking};
use crate::engine::CompiledCampaign;
use crate::error::Problems;
use crate::limits::{MAX_REF_CODE_LEN, MAX_TEXT_LEN};
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
        crate::wire::find_nul(&json, "", &mut problems);
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
        quotas: input.quotas,
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
            "too_long",
            format!("{field} is longer than {max} bytes"),
        );
    }
}

fn check_fields(input: &CampaignInput, problems: &mut Problems) {
    if input.name.trim().is_empty() {
        problems.push("name", "required", "name is required");
    }
    if input.ref_code.trim().is_empty() {
        problems.push("refCode", "required", "refCode is required");
    } else if input.ref_code != input.ref_code.trim() {
        problems.push(
            "refCode",
            "invalid_ref_code",
            "refCode must not start or end with whitespace",
        );
    }
    check_text(problems, "refCode", Some(&input.ref_code), MAX_REF_CODE_LEN);
    check_text(problems, "name", Some(&input.name), MAX_TEXT_LEN);
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
    check_text(problems, "channel", input.channel.as_deref(), MAX_TEXT_LEN);
    check_text(
        problems,
        "groupName",
        input.group_name.as_deref(),
        MAX_TEXT_LEN,
    );
    match (input.start_date, input.end_date) {
        (None, _) | (_, None) => {
            if input.start_date.is_none() {
                problems.push("startDate", "required", "startDate is required");
            }
            if input.end_date.is_none() {
                problems.push("endDate", "required", "endDate is required");
            }
        }
        (Some(start), Some(end)) if start >= end => {
            problems.push(
                "endDate",
                "invalid_period",
                "endDate must be after startDate",
            );
        }
        _ => {}
    }
    if !input.status.is_known() {
        problems.push(
            "status",
            "invalid_enum",
            format!(
                "unknown status {:?}; expected one of {}",
                input.status.as_str(),
                CampaignStatus::expected()
            ),
        );
    }
    if let Some(group) = input.stacking.as_ref().and_then(|s| s.group.as_deref()) {
        check_text(problems, "stacking.group", Some(group), MAX_REF_CODE_LEN);
    }
    if input.priority.is_some_and(|p| p < 1) {
        problems.push(
            "priority",
            "invalid_priority",
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
                "duplicate",
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
                    "too_long",
                    format!("actionRef is longer than {MAX_REF_CODE_LEN} bytes"),
                );
            }
            if !refs.insert(then.action_ref.clone()) {
                problems.push(
                    format!("rules[{r}].then[{b}].actionRef"),
                    "duplicate",
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
