//! Rule plans: the conditions of every rule of a snapshot, with custom
//! attribute names resolved to dense slots once, when the snapshot is built.
//!
//! A request is then prepared against the snapshot's [`Symbols`] (each of
//! its attributes looked up once), and evaluating a condition reads its
//! input by slot — no hashing of names per condition.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::compile::CompiledCampaign;
use crate::core::campaign::MatchKind;
use crate::core::condition::{CompiledCondition, Target};
use crate::core::hash::FxHashMap;

/// Custom attribute names used by the conditions of a snapshot, each with a
/// dense slot number.
#[derive(Debug, Clone, Default)]
pub(crate) struct Symbols {
    slots: FxHashMap<Box<str>, u32>,
}

impl Symbols {
    /// The slot of a name, adding it if new.
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        if let Some(&slot) = self.slots.get(name) {
            return slot;
        }
        let slot = u32::try_from(self.slots.len()).expect("fewer than 2^32 attribute names");
        self.slots.insert(name.into(), slot);
        slot
    }

    /// The slot of a name, if any condition reads it.
    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.slots.get(name).copied()
    }

    /// Number of slots.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }
}

/// Where a condition reads its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum InputRef {
    /// A custom attribute, by slot.
    Slot(u32),
    TotalPrice,
    Currency,
    Sku,
    Amount,
    Price,
    Tags,
}

impl InputRef {
    pub(crate) fn is_item(self) -> bool {
        matches!(
            self,
            InputRef::Sku | InputRef::Amount | InputRef::Price | InputRef::Tags
        )
    }
}

/// One condition of a rule plan.
#[derive(Debug, Clone)]
pub(crate) struct CondPlan {
    pub(crate) input: InputRef,
    pub(crate) cond: Arc<CompiledCondition>,
    /// Position of the condition in its group, for explanations.
    pub(crate) position: usize,
    /// Set by the index for a request-level condition it indexes: a
    /// candidate the index vouches for satisfies it, so matching skips it.
    pub(crate) indexed: bool,
}

/// One `when` group, split into conditions on the request and on cart items.
#[derive(Debug, Clone)]
pub(crate) struct GroupPlan {
    pub(crate) match_kind: MatchKind,
    pub(crate) plain: Vec<CondPlan>,
    pub(crate) item: Vec<CondPlan>,
}

/// One rule of one campaign.
#[derive(Debug, Clone)]
pub(crate) struct RulePlan {
    /// Index of the campaign in the snapshot.
    pub(crate) campaign: u32,
    /// Index of the rule in its campaign.
    pub(crate) rule: u32,
    pub(crate) groups: Vec<GroupPlan>,
    /// Set by the index: a full index mask alone proves the rule holds.
    pub(crate) exact: bool,
    /// The rule's `validFrom` and `validTo`, copied here so that matching
    /// reads no campaign.
    pub(crate) valid_from: Option<DateTime<Utc>>,
    pub(crate) valid_to: Option<DateTime<Utc>>,
}

impl RulePlan {
    /// Whether the rule's validity window contains `now`.
    pub(crate) fn valid_at(&self, now: DateTime<Utc>) -> bool {
        self.valid_from.is_none_or(|from| from <= now) && self.valid_to.is_none_or(|to| now < to)
    }
}

/// What matching needs of a campaign, kept compact beside the rule plans:
/// a search over many candidates then reads no campaign it does not fire.
#[derive(Debug, Clone)]
pub(crate) struct CampaignMeta {
    enabled: bool,
    /// The campaign's scheduled status changes (usually none).
    schedule: Vec<crate::core::campaign::StatusChange>,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    /// Whether the campaign runs on one channel only.
    pub(crate) has_channel: bool,
}

impl CampaignMeta {
    pub(crate) fn of(cc: &CompiledCampaign) -> Self {
        let c = &cc.campaign;
        CampaignMeta {
            enabled: c.status == crate::core::campaign::CampaignStatus::Enable,
            schedule: c.status_schedule.clone(),
            start: c.start_date,
            end: c.end_date,
            has_channel: c.channel.is_some(),
        }
    }

    /// [`crate::core::campaign::Campaign::is_running`].
    pub(crate) fn is_running(&self, now: DateTime<Utc>) -> bool {
        let enabled = if self.schedule.is_empty() {
            self.enabled
        } else {
            let base = if self.enabled {
                crate::core::campaign::CampaignStatus::Enable
            } else {
                crate::core::campaign::CampaignStatus::Disable
            };
            *crate::core::campaign::status_at(&base, &self.schedule, now)
                == crate::core::campaign::CampaignStatus::Enable
        };
        enabled && self.start <= now && now < self.end
    }
}

/// Builds the plans of `campaigns` (in snapshot order), interning names.
pub(crate) fn build(campaigns: &[Arc<CompiledCampaign>], symbols: &mut Symbols) -> Vec<RulePlan> {
    let mut plans = Vec::new();
    for (c, cc) in campaigns.iter().enumerate() {
        for (r, rule) in cc.rules.iter().enumerate() {
            let groups = rule
                .groups
                .iter()
                .map(|group| {
                    let mut plan = GroupPlan {
                        match_kind: group.match_kind.clone(),
                        plain: Vec::new(),
                        item: Vec::new(),
                    };
                    for (position, cond) in group.conditions.iter().enumerate() {
                        let input = input_ref(&cond.target, symbols);
                        let entry = CondPlan {
                            input,
                            cond: Arc::clone(cond),
                            position,
                            indexed: false,
                        };
                        if input.is_item() {
                            plan.item.push(entry);
                        } else {
                            plan.plain.push(entry);
                        }
                    }
                    plan
                })
                .collect();
            let source = &cc.campaign.rules[r];
            plans.push(RulePlan {
                campaign: u32::try_from(c).expect("fewer than 2^32 campaigns"),
                rule: u32::try_from(r).expect("fewer than 2^32 rules"),
                groups,
                exact: false,
                valid_from: source.valid_from,
                valid_to: source.valid_to,
            });
        }
    }
    plans
}

fn input_ref(target: &Target, symbols: &mut Symbols) -> InputRef {
    match target {
        Target::TotalPrice => InputRef::TotalPrice,
        Target::Currency => InputRef::Currency,
        Target::Sku => InputRef::Sku,
        Target::Amount => InputRef::Amount,
        Target::Price => InputRef::Price,
        Target::Tags => InputRef::Tags,
        Target::Custom(name) => InputRef::Slot(symbols.intern(name)),
    }
}
