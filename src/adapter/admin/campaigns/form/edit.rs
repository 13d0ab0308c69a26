//! The structural edits of the campaign form (add a rule, remove a
//! condition, …), which the form submits without JavaScript, and the blank
//! parts they add.

use super::{CondDraft, DataDraft, Draft, GroupDraft, QuotaDraft, RuleDraft, ThenDraft};

impl Draft {
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
    pub(super) fn blank() -> RuleDraft {
        RuleDraft {
            then_operator: "AND".into(),
            when: vec![GroupDraft::blank()],
            then: vec![ThenDraft::blank()],
            ..RuleDraft::default()
        }
    }
}

impl GroupDraft {
    pub(super) fn blank() -> GroupDraft {
        GroupDraft {
            match_kind: "ALL".into(),
            conditions: vec![CondDraft::blank()],
        }
    }
}

impl CondDraft {
    pub(super) fn blank() -> CondDraft {
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
    pub(super) fn blank() -> ThenDraft {
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
