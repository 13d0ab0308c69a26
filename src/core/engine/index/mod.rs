//! The inverted index over conjunctions that makes search touch only the
//! rules a request can satisfy.
//!
//! This is the counting approach of Whang et al., "Indexing Boolean
//! Expressions" (VLDB 2009), specialised to Accord's rules. Every rule is a
//! conjunction of its `ALL` groups' conditions. The *indexable* conditions
//! of a rule are the positive equality tests: `eq`, `in` and `contains` on a
//! custom attribute, an item's `sku` or `tags`, plus the campaign's channel;
//! and the positive numeric ranges (`gt`, `gte`, `lt`, `lte` against a
//! number) on any input but the currency (see [`range`]). Each gets a bit;
//! the index maps every (input, value) that satisfies an equality test to
//! the (rule, bit) pairs it satisfies, and keeps each input's range bounds
//! sorted. For a request, each of its values is looked up once and each
//! ranged input's bounds searched once, the bits are OR-ed per rule, and a
//! rule is a *candidate* when all its bits are set. Rules with no indexable
//! condition are always candidates.
//!
//! **Exactness:** a rule that fires has every indexable condition true, and
//! an indexable condition is true only if some request value equals one of
//! its values, or lies within its range — so every firing rule is a
//! candidate. Candidates are then verified by the full evaluator (regexes,
//! negations, the same-item rule of `cartItem` conditions), so the result
//! is exactly that of evaluating every rule one by one. Property tests
//! check it.
//!
//! **Exact rules:** when *every* condition of a rule is indexed, the rule
//! has no `cartItem` condition and all its groups are `ALL`, a full mask is
//! not only necessary but sufficient: each bit is set exactly when its
//! condition holds for some value of its input, which for a positive
//! equality test or range on a request-level input is the condition's own
//! semantics.
//! Such a candidate is not evaluated again. Other candidates are verified,
//! but the request-level conditions the index checked (their bit is set, or
//! their dense row kept the rule) are skipped: the index already proved
//! them.
//!
//! **Dense attributes:** custom attributes that many rules test against few
//! distinct values are filtered with bitmaps instead of counted (see
//! [`dense`]); their conditions take no bit here, and the two filters are
//! combined per rule.

mod dense;
mod range;

use std::cell::RefCell;

use rust_decimal::Decimal;

use super::plan::{CondPlan, InputRef, RulePlan};
use super::request::Prepared;
use crate::core::campaign::MatchKind;
use crate::core::condition::{Cmp, Field, Test};
use crate::core::hash::FxHashMap;
use dense::Dense;
use range::Ranges;

/// Most indexed conditions per rule (bits of a `u64`); further ones are
/// only verified.
const MAX_BITS: usize = 64;

#[derive(Debug, Clone, Copy)]
struct Posting {
    rule: u32,
    bit: u8,
}

/// The posting lists of one input: by text, and by decimal value.
#[derive(Debug, Clone, Default)]
struct Lists {
    text: FxHashMap<Box<str>, Vec<Posting>>,
    number: FxHashMap<Decimal, Vec<Posting>>,
}

impl Lists {
    /// Posts an equality or membership test's values; `false` for another
    /// kind of test.
    fn add(&mut self, test: &Test, posting: Posting) -> bool {
        match test {
            Test::Str(Cmp::Eq, v) => push_text(&mut self.text, v, posting),
            Test::StrSet(set) => {
                for v in set {
                    push_text(&mut self.text, v, posting);
                }
            }
            Test::Num(Cmp::Eq, v) => {
                self.number.entry(v.normalize()).or_default().push(posting);
            }
            Test::NumSet(set) => {
                for v in set {
                    self.number.entry(*v).or_default().push(posting);
                }
            }
            _ => return false,
        }
        true
    }
}

/// The index of one snapshot.
#[derive(Debug, Clone, Default)]
pub(crate) struct Index {
    /// Posting lists by input, densely numbered: custom attribute slots
    /// `0..slots`, then `sku`, `tags` and the channel (see [`Index::key`]).
    lists: Vec<Lists>,
    slots: usize,
    /// Per rule: the mask with all its indexed bits set (0: always a candidate).
    full: Vec<u64>,
    /// Rules with no indexed condition, in rule order.
    always: Vec<u32>,
    /// The range conditions, per input that has any.
    ranges: Vec<Ranges>,
    /// The dense attributes' filters.
    dense: Dense,
    /// With dense attributes: `always` as a bitmap.
    always_bits: Vec<u64>,
}

/// The candidate rules of a request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Candidates {
    /// Rule numbers, in rule order.
    pub(crate) rules: Vec<u32>,
    /// Whether an exact rule among them holds without evaluation; `false`
    /// when a dense filter had to be skipped for this request.
    pub(crate) exact: bool,
}

/// Per-thread scratch of the counting pass, reused across searches so a
/// search over 100,000 rules does not allocate or clear 100,000 counters.
#[derive(Default)]
struct Scratch {
    masks: Vec<u64>,
    touched: Vec<u32>,
    /// The dense filters' result, a bit per rule.
    passed: Vec<u64>,
    /// The rules with a full mask, a bit per rule (with dense filters).
    full_bits: Vec<u64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Adds a posting to the list of `value`, copying the value only for a new
/// list (hot values are shared by thousands of rules).
fn push_text(lists: &mut FxHashMap<Box<str>, Vec<Posting>>, value: &str, posting: Posting) {
    match lists.get_mut(value) {
        Some(list) => list.push(posting),
        None => {
            lists.insert(value.into(), vec![posting]);
        }
    }
}

/// Whether a condition goes into the posting lists: a positive equality or
/// membership test on a custom attribute, `sku` or `tags`.
fn indexable(c: &CondPlan) -> bool {
    matches!(c.input, InputRef::Slot(_) | InputRef::Sku | InputRef::Tags)
        && !c.cond.negated
        && matches!(
            c.cond.test,
            Test::Str(Cmp::Eq, _) | Test::StrSet(_) | Test::Num(Cmp::Eq, _) | Test::NumSet(_)
        )
}

/// Whether a condition goes into the range bounds: a positive numeric
/// `gt`, `gte`, `lt` or `lte` on any input but the currency (whose values
/// are never numbers a rule would compare).
fn rangeable(c: &CondPlan) -> bool {
    c.input != InputRef::Currency
        && !c.cond.negated
        && matches!(
            c.cond.test,
            Test::Num(Cmp::Gt | Cmp::Gte | Cmp::Lt | Cmp::Lte, _)
        )
}

/// Where a condition's bit is posted: the posting lists of a list number, or
/// the range bounds of an input.
#[derive(Clone, Copy)]
enum At {
    List(usize),
    Range(InputRef),
}

impl Index {
    /// The list number of an input (`None`: never indexed).
    fn key(&self, input: InputRef) -> Option<usize> {
        match input {
            InputRef::Slot(s) => Some(s as usize),
            InputRef::Sku => Some(self.slots),
            InputRef::Tags => Some(self.slots + 1),
            _ => None,
        }
    }

    fn channel_key(&self) -> usize {
        self.slots + 2
    }

    /// Indexes the rules; `channels[c]` is the channel of campaign `c`,
    /// `slots` the number of custom attribute slots. Marks the request-level
    /// conditions it indexes ([`CondPlan::indexed`]) and the rules a full
    /// mask proves ([`RulePlan::exact`]).
    pub(crate) fn build(rules: &mut [RulePlan], channels: &[Option<&str>], slots: usize) -> Index {
        let mut index = Index {
            lists: vec![Lists::default(); slots + 3],
            slots,
            full: vec![0; rules.len()],
            ranges: range::every_input(slots),
            dense: Dense::build(rules, slots),
            ..Index::default()
        };
        for (r, rule) in rules.iter_mut().enumerate() {
            let id = u32::try_from(r).expect("fewer than 2^32 rules");
            let mut bit = 0usize;
            let mut add = |index: &mut Index, at: At, test: &Test| -> bool {
                if bit >= MAX_BITS {
                    return false;
                }
                let posting = Posting {
                    rule: id,
                    bit: u8::try_from(bit).expect("bit < 64"),
                };
                let added = match at {
                    At::List(key) => index.lists[key].add(test, posting),
                    At::Range(input) => index.add_range(input, test, posting),
                };
                bit += usize::from(added);
                added
            };
            let mut exact = true;
            if let Some(channel) = channels[rule.campaign as usize] {
                let key = index.channel_key();
                exact &= add(
                    &mut index,
                    At::List(key),
                    &Test::Str(Cmp::Eq, channel.into()),
                );
            }
            for group in &mut rule.groups {
                // Only conjunctive groups give necessary conditions.
                if group.match_kind != MatchKind::All {
                    exact = false;
                    continue;
                }
                exact &= group.item.is_empty();
                for c in &mut group.plain {
                    match index.key(c.input) {
                        Some(_) if indexable(c) && index.is_dense_input(c.input) => {
                            c.indexed = true;
                        }
                        Some(key) if indexable(c) => {
                            c.indexed = add(&mut index, At::List(key), &c.cond.test);
                            exact &= c.indexed;
                        }
                        _ if rangeable(c) => {
                            c.indexed = add(&mut index, At::Range(c.input), &c.cond.test);
                            exact &= c.indexed;
                        }
                        _ => exact = false,
                    }
                }
                // Item conditions narrow candidates, but each must still
                // hold for one same item: they are always verified.
                for c in &group.item {
                    match index.key(c.input) {
                        Some(key) if indexable(c) => {
                            exact &= add(&mut index, At::List(key), &c.cond.test);
                        }
                        _ if rangeable(c) => {
                            exact &= add(&mut index, At::Range(c.input), &c.cond.test);
                        }
                        _ => exact = false,
                    }
                }
            }
            let full = if bit == 0 { 0 } else { u64::MAX >> (64 - bit) };
            index.full[r] = full;
            rule.exact = exact;
            if full == 0 {
                index.always.push(id);
            }
        }
        range::finish(&mut index.ranges);
        if !index.dense.is_empty() {
            index.always_bits = vec![0; rules.len().div_ceil(64)];
            for &r in &index.always {
                index.always_bits[r as usize / 64] |= 1 << (r % 64);
            }
        }
        index
    }

    /// Adds a range condition's bound while the index is built, when
    /// `ranges` holds [`range::every_input`]; `false` if `test` is no range.
    fn add_range(&mut self, input: InputRef, test: &Test, posting: Posting) -> bool {
        let Test::Num(cmp, threshold) = test else {
            return false;
        };
        self.ranges[range::position(input, self.slots)].add(*cmp, *threshold, posting)
    }

    /// Whether custom attribute slot `slot` is filtered densely.
    #[cfg(test)]
    pub(crate) fn is_dense_slot(&self, slot: u32) -> bool {
        self.dense.is_dense(slot)
    }

    fn is_dense_input(&self, input: InputRef) -> bool {
        matches!(input, InputRef::Slot(s) if self.dense.is_dense(s))
    }

    /// The candidate rules of a request.
    pub(crate) fn candidates(&self, req: &Prepared<'_>) -> Candidates {
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let Scratch {
                masks,
                touched,
                passed,
                full_bits,
            } = &mut *scratch;
            if masks.len() < self.full.len() {
                masks.resize(self.full.len(), 0);
            }
            let mut hit = |postings: &[Posting]| {
                for p in postings {
                    let m = &mut masks[p.rule as usize];
                    if *m == 0 {
                        touched.push(p.rule);
                    }
                    *m |= 1 << p.bit;
                }
            };
            for (input, value) in req.indexed_values() {
                if let Some(key) = self.key(input) {
                    self.probe(key, value, &mut hit);
                }
            }
            if let Some(channel) = req.channel() {
                self.probe(self.channel_key(), channel, &mut hit);
            }
            for ranges in &self.ranges {
                ranges.probe(req, &mut hit);
            }
            let dense = !self.dense.is_empty();
            let exact = if dense {
                self.dense.filter(req, passed)
            } else {
                true
            };
            let mut out: Vec<u32> = Vec::with_capacity(touched.len() + self.always.len());
            if dense && full_bits.len() < passed.len() {
                full_bits.resize(passed.len(), 0);
            }
            // Rules with every counted bit: candidates at once, or, with
            // dense filters, marked in `full_bits` for the ordered pass below.
            for &r in touched.iter() {
                let m = &mut masks[r as usize];
                if *m == self.full[r as usize] {
                    if dense {
                        full_bits[r as usize / 64] |= 1 << (r % 64);
                    } else {
                        out.push(r);
                    }
                }
                *m = 0;
            }
            touched.clear();
            if dense {
                // In one ordered pass: the marked rules and the rules with no
                // counted condition, those that pass the dense filters.
                for (w, ((&p, &a), f)) in passed
                    .iter()
                    .zip(&self.always_bits)
                    .zip(full_bits.iter_mut())
                    .enumerate()
                {
                    let mut bits = p & (a | *f);
                    *f = 0;
                    while bits != 0 {
                        let r = w * 64 + bits.trailing_zeros() as usize;
                        out.push(u32::try_from(r).expect("fewer than 2^32 rules"));
                        bits &= bits - 1;
                    }
                }
            } else {
                out.extend_from_slice(&self.always);
                out.sort_unstable();
            }
            Candidates { rules: out, exact }
        })
    }

    fn probe(&self, key: usize, value: &Field, hit: &mut impl FnMut(&[Posting])) {
        let lists = &self.lists[key];
        if lists.text.is_empty() && lists.number.is_empty() {
            return;
        }
        if let Some(p) = lists.text.get(value.text()) {
            hit(p);
        }
        if !lists.number.is_empty() {
            if let Some(p) = value.num().and_then(|n| lists.number.get(&n.normalize())) {
                hit(p);
            }
        }
    }
}
