//! The inverted index over conjunctions that makes search touch only the
//! rules a request can satisfy.
//!
//! This is the counting approach of Whang et al., "Indexing Boolean
//! Expressions" (VLDB 2009), specialised to Accord's rules. Every rule is a
//! conjunction of its `ALL` groups' conditions. The *indexable* conditions
//! of a rule are the positive equality tests: `eq`, `in` and `contains` on a
//! custom attribute, an item's `sku` or `tags`, plus the campaign's channel.
//! Each gets a bit; the index maps every (input, value) that satisfies one
//! of them to the (rule, bit) pairs it satisfies. For a request, each of its
//! values is looked up once, the bits are OR-ed per rule, and a rule is a
//! *candidate* when all its bits are set. Rules with no indexable condition
//! are always candidates.
//!
//! **Exactness:** a rule that fires has every indexable condition true, and
//! an indexable condition is true only if some request value equals one of
//! its values — so every firing rule is a candidate. Candidates are then
//! verified by the full evaluator (ranges, regexes, negations, the
//! same-item rule of `cartItem` conditions), so the result is exactly that
//! of evaluating every rule one by one. A property test checks it.

use std::cell::RefCell;
use std::collections::HashMap;

use rust_decimal::Decimal;

use super::plan::{InputRef, RulePlan};
use super::request::Prepared;
use crate::campaign::MatchKind;
use crate::condition::{Field, Test};

/// Most indexed conditions per rule (bits of a `u64`); further ones are
/// only verified.
const MAX_BITS: usize = 64;

/// Which posting list an input value is looked up in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Input(InputRef),
    Channel,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    rule: u32,
    bit: u8,
}

/// The index of one snapshot.
#[derive(Debug, Clone, Default)]
pub(crate) struct Index {
    text: HashMap<Key, HashMap<Box<str>, Vec<Posting>>>,
    number: HashMap<Key, HashMap<Decimal, Vec<Posting>>>,
    /// Per rule: the mask with all its indexed bits set (0: always a candidate).
    full: Vec<u64>,
    /// Rules with no indexed condition, in rule order.
    always: Vec<u32>,
}

/// Per-thread scratch of the counting pass, reused across searches so a
/// search over 100,000 rules does not allocate or clear 100,000 counters.
#[derive(Default)]
struct Scratch {
    masks: Vec<u64>,
    touched: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Index {
    /// Indexes the rules; `channels[c]` is the channel of campaign `c`.
    pub(crate) fn build(rules: &[RulePlan], channels: &[Option<&str>]) -> Index {
        let mut index = Index {
            full: vec![0; rules.len()],
            ..Index::default()
        };
        for (r, rule) in rules.iter().enumerate() {
            let id = u32::try_from(r).expect("fewer than 2^32 rules");
            let mut bit = 0usize;
            let mut add = |index: &mut Index, key: Key, test: &Test| -> bool {
                if bit >= MAX_BITS {
                    return false;
                }
                let posting = Posting {
                    rule: id,
                    bit: u8::try_from(bit).expect("bit < 64"),
                };
                let indexed = match test {
                    Test::Str(crate::condition::Cmp::Eq, v) => {
                        index
                            .text
                            .entry(key)
                            .or_default()
                            .entry(v.clone())
                            .or_default()
                            .push(posting);
                        true
                    }
                    Test::StrSet(set) => {
                        let map = index.text.entry(key).or_default();
                        for v in set {
                            map.entry(v.clone()).or_default().push(posting);
                        }
                        true
                    }
                    Test::Num(crate::condition::Cmp::Eq, v) => {
                        index
                            .number
                            .entry(key)
                            .or_default()
                            .entry(v.normalize())
                            .or_default()
                            .push(posting);
                        true
                    }
                    Test::NumSet(set) => {
                        let map = index.number.entry(key).or_default();
                        for v in set {
                            map.entry(*v).or_default().push(posting);
                        }
                        true
                    }
                    _ => false,
                };
                if indexed {
                    bit += 1;
                }
                indexed
            };
            if let Some(channel) = channels[rule.campaign as usize] {
                add(
                    &mut index,
                    Key::Channel,
                    &Test::Str(crate::condition::Cmp::Eq, channel.into()),
                );
            }
            for group in &rule.groups {
                // Only conjunctive groups give necessary conditions.
                if group.match_kind != MatchKind::All {
                    continue;
                }
                for c in group.plain.iter().chain(&group.item) {
                    let indexable_input =
                        matches!(c.input, InputRef::Slot(_) | InputRef::Sku | InputRef::Tags);
                    if indexable_input && !c.cond.negated {
                        add(&mut index, Key::Input(c.input), &c.cond.test);
                    }
                }
            }
            let full = if bit == 0 { 0 } else { u64::MAX >> (64 - bit) };
            index.full[r] = full;
            if full == 0 {
                index.always.push(id);
            }
        }
        index
    }

    /// The candidate rules of a request, in rule order.
    pub(crate) fn candidates(&self, req: &Prepared<'_>) -> Vec<u32> {
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let Scratch { masks, touched } = &mut *scratch;
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
            for (key, value) in req.indexed_values() {
                self.probe(key_of(key), value, &mut hit);
            }
            if let Some(channel) = req.channel() {
                self.probe(Key::Channel, channel, &mut hit);
            }
            let mut out: Vec<u32> = Vec::with_capacity(touched.len() + self.always.len());
            for &r in touched.iter() {
                let m = &mut masks[r as usize];
                if *m == self.full[r as usize] {
                    out.push(r);
                }
                *m = 0;
            }
            touched.clear();
            out.extend_from_slice(&self.always);
            out.sort_unstable();
            out
        })
    }

    fn probe(&self, key: Key, value: &Field, hit: &mut impl FnMut(&[Posting])) {
        if let Some(p) = self.text.get(&key).and_then(|m| m.get(value.text())) {
            hit(p);
        }
        if let Some(map) = self.number.get(&key) {
            if let Some(p) = value.num().and_then(|n| map.get(&n.normalize())) {
                hit(p);
            }
        }
    }
}

fn key_of(input: InputRef) -> Key {
    Key::Input(input)
}
