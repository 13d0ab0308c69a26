//! Dense filters: one bitmap over all rules per value of the attributes
//! that many rules test against few distinct values.
//!
//! The counting pass costs one step per posting a request touches. When a
//! rule's conditions each accept a third of an attribute's values (a
//! typical targeting rule: `tier in [gold, silver]`), a request touches a
//! third of all postings, which at 100,000 rules is over 100,000 steps. For
//! such an attribute the index keeps instead, for each value `v` some
//! condition names, a row of bits where bit `r` says that rule `r` *passes*
//! the attribute with value `v`: it has no indexed condition on it, or every
//! indexed condition it has on it accepts `v`. A last row serves a value no
//! condition names, or no value: only the rules without an indexed condition
//! on the attribute pass. A request ANDs one row per dense attribute, a
//! sequential pass of `rules / 64` words each, and a rule stays a candidate
//! only if every row kept its bit.
//!
//! **Exactness** is the counting pass's: a rule that fires has each of its
//! indexed conditions true, so the request's value is one each accepts and
//! the rule's bit is set in that value's row. Only single values are read
//! this way; a request that sends an array for a dense attribute skips that
//! attribute's row (every rule passes it), and the search then verifies
//! every candidate rather than trusting exact rules.
//!
//! **Which attributes:** custom attributes read only by text `eq`/`in`
//! conditions (a numeric test keeps the attribute in the counting pass, which
//! compares decimals), with at most [`MAX_VALUES`] distinct values, tested
//! by at least one rule in 64 (below that, the posting lists are shorter
//! than a row). At most [`MAX_ATTRS`] of them, the most tested first: the
//! rows cost `(values + 1) × rules / 8` bytes per attribute.

use std::collections::hash_map::Entry;

use super::super::plan::{CondPlan, InputRef, RulePlan};
use super::super::request::{Attr, Prepared};
use super::indexable;
use crate::core::campaign::MatchKind;
use crate::core::condition::{Cmp, Test};
use crate::core::hash::{FxHashMap, FxHashSet};

/// Most distinct values of a dense attribute.
pub(crate) const MAX_VALUES: usize = 64;

/// Most dense attributes per snapshot.
pub(crate) const MAX_ATTRS: usize = 64;

/// One dense attribute.
#[derive(Debug, Clone)]
struct DenseAttr {
    slot: u32,
    /// Row number of each value a condition names; row `values.len()` is
    /// for any other value, or none.
    values: FxHashMap<Box<str>, u32>,
    /// `values.len() + 1` rows of `words` words each.
    rows: Vec<u64>,
}

/// The dense attributes of one snapshot.
#[derive(Debug, Clone, Default)]
pub(crate) struct Dense {
    /// Words per row: `ceil(rules / 64)`.
    words: usize,
    attrs: Vec<DenseAttr>,
    /// By slot: whether the slot is dense (its conditions are not in the
    /// counting pass).
    by_slot: Vec<bool>,
}

/// The text values an indexed condition accepts, or `None` for a numeric
/// test.
fn texts(test: &Test) -> Option<Vec<&str>> {
    match test {
        Test::Str(Cmp::Eq, v) => Some(vec![&**v]),
        Test::StrSet(set) => Some(set.iter().map(|v| &**v).collect()),
        _ => None,
    }
}

/// The indexed conditions on custom attributes of a rule: those of its
/// `ALL` groups that the index can use, with their slot.
fn slot_conditions(rule: &RulePlan) -> impl Iterator<Item = (u32, &CondPlan)> {
    rule.groups
        .iter()
        .filter(|g| g.match_kind == MatchKind::All)
        .flat_map(|g| &g.plain)
        .filter(|c| indexable(c))
        .filter_map(|c| match c.input {
            InputRef::Slot(s) => Some((s, c)),
            _ => None,
        })
}

/// What the first pass learns of one slot.
#[derive(Default)]
struct SlotStats<'a> {
    /// Rules with an indexed condition on the slot.
    rules: usize,
    /// A numeric test or too many values rules the slot out.
    ruled_out: bool,
    values: FxHashSet<&'a str>,
}

impl Dense {
    /// Chooses the dense attributes of `rules` and builds their rows.
    pub(crate) fn build(rules: &[RulePlan], slots: usize) -> Dense {
        let words = rules.len().div_ceil(64);
        let mut stats: Vec<SlotStats<'_>> = (0..slots).map(|_| SlotStats::default()).collect();
        let mut seen = FxHashSet::default();
        for rule in rules {
            seen.clear();
            for (slot, c) in slot_conditions(rule) {
                let st = &mut stats[slot as usize];
                if seen.insert(slot) {
                    st.rules += 1;
                }
                if st.ruled_out {
                    continue;
                }
                match texts(&c.cond.test) {
                    Some(vs) => {
                        st.values.extend(vs);
                        if st.values.len() > MAX_VALUES {
                            st.ruled_out = true;
                            st.values = FxHashSet::default();
                        }
                    }
                    None => st.ruled_out = true,
                }
            }
        }
        let mut chosen: Vec<usize> = (0..slots)
            .filter(|&s| {
                let st = &stats[s];
                !st.ruled_out && st.rules > 0 && st.rules * 64 >= rules.len()
            })
            .collect();
        chosen.sort_by_key(|&s| (std::cmp::Reverse(stats[s].rules), s));
        chosen.truncate(MAX_ATTRS);
        chosen.sort_unstable();

        let mut by_slot = vec![false; slots];
        let mut attrs = Vec::with_capacity(chosen.len());
        let mut of_slot = vec![usize::MAX; slots];
        for &s in &chosen {
            by_slot[s] = true;
            of_slot[s] = attrs.len();
            let mut values: Vec<&str> = stats[s].values.iter().copied().collect();
            values.sort_unstable();
            let values: FxHashMap<Box<str>, u32> = values
                .into_iter()
                .enumerate()
                .map(|(i, v)| (v.into(), u32::try_from(i).expect("at most MAX_VALUES")))
                .collect();
            let rows = vec![u64::MAX; (values.len() + 1) * words];
            attrs.push(DenseAttr {
                slot: u32::try_from(s).expect("slots fit u32"),
                values,
                rows,
            });
        }

        // Per rule and dense attribute: the rows its conditions all accept.
        let mut accepted: FxHashMap<usize, Vec<u32>> = FxHashMap::default();
        for (r, rule) in rules.iter().enumerate() {
            accepted.clear();
            for (slot, c) in slot_conditions(rule) {
                let a = of_slot[slot as usize];
                if a == usize::MAX {
                    continue;
                }
                let attr = &attrs[a];
                let mut rows: Vec<u32> = texts(&c.cond.test)
                    .expect("dense attributes have text tests only")
                    .into_iter()
                    .map(|v| attr.values[v])
                    .collect();
                rows.sort_unstable();
                match accepted.entry(a) {
                    Entry::Vacant(e) => {
                        e.insert(rows);
                    }
                    Entry::Occupied(mut e) => e.get_mut().retain(|v| rows.binary_search(v).is_ok()),
                }
            }
            let (word, bit) = (r / 64, 1u64 << (r % 64));
            for (&a, rows) in &accepted {
                let attr = &mut attrs[a];
                for row in 0..=attr.values.len() {
                    attr.rows[row * words + word] &= !bit;
                }
                for &row in rows {
                    attr.rows[row as usize * words + word] |= bit;
                }
            }
        }
        Dense {
            words,
            attrs,
            by_slot,
        }
    }

    /// Whether the conditions on `slot` are filtered here rather than
    /// counted.
    pub(crate) fn is_dense(&self, slot: u32) -> bool {
        self.by_slot.get(slot as usize).copied().unwrap_or(false)
    }

    /// Whether the snapshot has any dense attribute.
    pub(crate) fn is_empty(&self) -> bool {
        self.attrs.is_empty()
    }

    /// Sets `acc` to the rules that pass every dense attribute for `req`.
    /// Returns `false` when an attribute was skipped because the request sent
    /// several values for it: exact rules must then be verified.
    pub(crate) fn filter(&self, req: &Prepared<'_>, acc: &mut Vec<u64>) -> bool {
        let mut exact = true;
        let mut rows: Vec<&[u64]> = Vec::with_capacity(self.attrs.len());
        for attr in &self.attrs {
            let other = attr.values.len();
            let row = match req.attr(attr.slot) {
                Attr::One(f) => attr.values.get(f.text()).map_or(other, |&row| row as usize),
                Attr::Missing => other,
                Attr::Many(_) => {
                    exact = false;
                    continue;
                }
            };
            rows.push(&attr.rows[row * self.words..(row + 1) * self.words]);
        }
        acc.clear();
        acc.resize(self.words, u64::MAX);
        // Four rows per pass over `acc`: fewer loads and stores of it, and
        // loops the compiler vectorises.
        let mut groups = rows.chunks_exact(4);
        for g in &mut groups {
            let (a, b, c, d) = (g[0], g[1], g[2], g[3]);
            for ((((x, a), b), c), d) in acc.iter_mut().zip(a).zip(b).zip(c).zip(d) {
                *x &= a & b & c & d;
            }
        }
        for row in groups.remainder() {
            for (x, y) in acc.iter_mut().zip(*row) {
                *x &= y;
            }
        }
        exact
    }
}
