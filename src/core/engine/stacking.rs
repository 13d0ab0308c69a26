//! Which campaigns may apply together: exclusivity, stacking groups and
//! stop-after, resolved in priority order. Pure.

use std::cmp::Ordering;

use crate::core::campaign::{Campaign, Explanation};
use crate::core::error::ErrorCode;
use crate::{Error, Result};

/// Why a campaign does not apply with the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suppressed {
    /// An exclusive campaign applies, or this one is exclusive and another
    /// applies before it.
    Exclusive,
    /// A campaign of the same stacking group applies before it.
    Group,
    /// A campaign before it stops evaluation after it applies.
    Stopped,
}

impl Suppressed {
    /// The `explain` reason.
    pub fn reason(self) -> &'static str {
        match self {
            Suppressed::Exclusive => "exclusive_campaign",
            Suppressed::Group => "stacking_group",
            Suppressed::Stopped => "stopped",
        }
    }

    /// A sentence: `this` is suppressed by `by`.
    pub fn message(self, this: &Campaign, by: &Campaign) -> String {
        match self {
            Suppressed::Exclusive if this.stacking.as_ref().is_some_and(|s| s.exclusive) => format!(
                "campaign {:?} is exclusive, and {:?} applies before it (priority {}, then refCode)",
                this.ref_code, by.ref_code, by.priority
            ),
            Suppressed::Exclusive => format!(
                "campaign {:?} is exclusive and applies before {:?}",
                by.ref_code, this.ref_code
            ),
            Suppressed::Group => format!(
                "campaign {:?} of stacking group {:?} applies before {:?}",
                by.ref_code,
                by.stacking
                    .as_ref()
                    .and_then(|s| s.group.as_deref())
                    .unwrap_or_default(),
                this.ref_code
            ),
            Suppressed::Stopped => format!(
                "campaign {:?} stops evaluation after it applies, before {:?}",
                by.ref_code, this.ref_code
            ),
        }
    }
}

/// The `explain` entry of campaign `this`, suppressed by `by`.
pub fn explanation(this: &Campaign, by: &Campaign, why: Suppressed) -> Explanation {
    Explanation {
        campaign_id: this.id,
        ref_code: this.ref_code.clone(),
        reason: why.reason().to_owned(),
        rule_id: None,
        field: None,
        attribute: None,
        op: None,
        expected: None,
        actual: None,
        quota_key: None,
        suppressed_by: Some(by.ref_code.clone()),
        message: why.message(this, by),
    }
}

/// The order campaigns are taken in: priority (1 first), then `refCode`.
pub fn order(a: &Campaign, b: &Campaign) -> Ordering {
    (a.priority, &a.ref_code).cmp(&(b.priority, &b.ref_code))
}

/// For each campaign of `campaigns` (in [`order`]), `None` when it applies
/// with the others, or why it does not and the index of the campaign that
/// suppressed it.
pub fn resolve(campaigns: &[&Campaign]) -> Vec<Option<(Suppressed, usize)>> {
    let mut out = Vec::with_capacity(campaigns.len());
    // Indices of the campaigns that apply.
    let mut applied: Vec<usize> = Vec::new();
    let mut stopped_by: Option<usize> = None;
    let mut exclusive_by: Option<usize> = None;
    for (i, c) in campaigns.iter().enumerate() {
        // Read in place: a search resolves every hit, most without stacking.
        let (exclusive, group, stop_after) =
            c.stacking.as_ref().map_or((false, None, false), |s| {
                (s.exclusive, s.group.as_deref(), s.stop_after)
            });
        let group_first = group.and_then(|g| {
            applied.iter().copied().find(|&a| {
                campaigns[a]
                    .stacking
                    .as_ref()
                    .and_then(|s| s.group.as_deref())
                    == Some(g)
            })
        });
        let verdict = if let Some(s) = stopped_by {
            Some((Suppressed::Stopped, s))
        } else if let Some(e) = exclusive_by {
            Some((Suppressed::Exclusive, e))
        } else if let (true, Some(&first)) = (exclusive, applied.first()) {
            Some((Suppressed::Exclusive, first))
        } else {
            group_first.map(|g| (Suppressed::Group, g))
        };
        if verdict.is_none() {
            applied.push(i);
            if exclusive {
                exclusive_by = Some(i);
            }
            if stop_after {
                stopped_by = Some(i);
            }
        }
        out.push(verdict);
    }
    out
}

/// Checks that `this` may be redeemed together with `others` (any order,
/// `this` not among them): a `stacking_conflict` (409) naming the first
/// campaign of the combination that its stacking rules suppress.
pub fn check_combination(this: &Campaign, others: &[&Campaign]) -> Result<()> {
    let mut all: Vec<&Campaign> = Vec::with_capacity(others.len() + 1);
    all.push(this);
    all.extend(others.iter().copied().filter(|o| o.id != this.id));
    all.sort_by(|a, b| order(a, b));
    all.dedup_by(|a, b| a.id == b.id);
    let verdicts = resolve(&all);
    match verdicts
        .iter()
        .enumerate()
        .find_map(|(i, v)| v.map(|(why, by)| (i, why, by)))
    {
        None => Ok(()),
        Some((i, why, by)) => Err(Error::new(
            ErrorCode::StackingConflict,
            format!(
                "campaign {:?} cannot be applied with {:?}: {}",
                this.ref_code,
                others
                    .iter()
                    .map(|o| o.ref_code.as_str())
                    .collect::<Vec<_>>(),
                why.message(all[i], all[by])
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::campaign::Stacking;

    /// A campaign `code` with priority and stacking `spec`: `x` exclusive,
    /// `s` stop after, `g:<name>` group.
    fn c(code: &str, priority: i32, spec: &str) -> Campaign {
        let mut stacking = Stacking::default();
        for part in spec.split_whitespace() {
            match part {
                "x" => stacking.exclusive = true,
                "s" => stacking.stop_after = true,
                g => stacking.group = Some(g.trim_start_matches("g:").to_owned()),
            }
        }
        serde_json::from_value(serde_json::json!({
            "id": uuid::Uuid::new_v4(), "name": code, "refCode": code, "priority": priority,
            "startDate": "2026-01-01T00:00:00Z", "endDate": "2027-01-01T00:00:00Z",
            "status": "ENABLE", "quotas": [], "rules": [], "projectId": "p", "version": 1,
            "createdBy": "t", "lastModifiedBy": "t",
            "createdDate": "2026-01-01T00:00:00Z", "lastModifiedDate": "2026-01-01T00:00:00Z",
            "stacking": stacking
        }))
        .unwrap()
    }

    /// Resolves `campaigns` (sorted first) and renders each verdict:
    /// `A` applies, `B<x:A` suppressed by A for exclusivity.
    fn check(campaigns: &[Campaign], want: &str) {
        let mut sorted: Vec<&Campaign> = campaigns.iter().collect();
        sorted.sort_by(|a, b| order(a, b));
        let got: Vec<String> = resolve(&sorted)
            .iter()
            .zip(&sorted)
            .map(|(v, c)| match v {
                None => c.ref_code.clone(),
                Some((why, by)) => {
                    let tag = match why {
                        Suppressed::Exclusive => "x",
                        Suppressed::Group => "g",
                        Suppressed::Stopped => "s",
                    };
                    format!("{}<{tag}:{}", c.ref_code, sorted[*by].ref_code)
                }
            })
            .collect();
        assert_eq!(got.join(" "), want);
    }

    #[test]
    fn stacking_cases() {
        // Defaults: everything stacks.
        check(&[c("B", 2, ""), c("A", 1, ""), c("C", 1, "")], "A C B");
        // An exclusive campaign first: nothing else.
        check(
            &[c("A", 1, "x"), c("B", 2, ""), c("C", 3, "")],
            "A B<x:A C<x:A",
        );
        // An exclusive campaign after another: it is the one suppressed.
        check(&[c("A", 1, ""), c("B", 2, "x"), c("C", 3, "")], "A B<x:A C");
        // Ties on priority break by refCode.
        check(&[c("Z", 1, "x"), c("M", 1, "x")], "M Z<x:M");
        // One per group, the first in order; other groups and ungrouped stack.
        check(
            &[
                c("A", 1, "g:ship"),
                c("B", 2, "g:ship"),
                c("C", 2, "g:cart"),
                c("D", 3, ""),
            ],
            "A B<g:A C D",
        );
        // Stop after: what came before stays, nothing after applies.
        check(
            &[c("A", 1, ""), c("B", 2, "s"), c("C", 3, "x")],
            "A B C<s:B",
        );
        // A suppressed campaign neither stops nor claims its group.
        check(
            &[c("A", 1, "g:g"), c("B", 2, "g:g s"), c("C", 3, "g:h")],
            "A B<g:A C",
        );
    }

    #[test]
    fn combinations_at_redeem() {
        let (a, b, x, s) = (
            c("A", 1, "g:g"),
            c("B", 2, "g:g"),
            c("X", 3, "x"),
            c("S", 0, "s"),
        );
        assert!(check_combination(&a, &[]).is_ok());
        assert!(check_combination(&a, &[&c("D", 5, "")]).is_ok());
        let e = check_combination(&b, &[&a]).unwrap_err();
        assert_eq!(
            (e.kind(), e.code()),
            (crate::ErrorKind::Conflict, "stacking_conflict")
        );
        assert!(
            e.message().contains("stacking group \"g\""),
            "{}",
            e.message()
        );
        assert_eq!(
            check_combination(&x, &[&a]).unwrap_err().code(),
            "stacking_conflict"
        );
        assert_eq!(
            check_combination(&a, &[&s]).unwrap_err().code(),
            "stacking_conflict"
        );
        assert!(
            check_combination(&a, &[&a]).is_ok(),
            "itself is no combination"
        );
    }
}
