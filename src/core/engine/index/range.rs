//! Numeric range conditions in the counting pass.
//!
//! A positive `gt`, `gte`, `lt` or `lte` test against a number holds for a
//! value exactly when the value is on the right side of the condition's
//! threshold. Per input, the index keeps the lower bounds (`gt`, `gte`)
//! sorted up and the upper bounds (`lt`, `lte`) sorted down, each with the
//! (rule, bit) posting of its condition. The lower bounds a value `v`
//! satisfies are then a prefix of their list (every threshold below `v`, and
//! `v` itself for `gte`), found by binary search; likewise the upper bounds.
//!
//! An input with several values (an array attribute, or an item field read
//! on every item) satisfies the union of its values' prefixes, which is the
//! prefix of its largest value for lower bounds and of its smallest for
//! upper bounds: one search per list and input, whatever the number of
//! values. Values that are not numbers satisfy no range, as in evaluation.
//!
//! The search compares integers: when every threshold of a side fits an
//! `i128` at the side's largest scale (always, short of thresholds near
//! `Decimal`'s limits), the thresholds are kept at that scale and the value
//! is brought to it as an integer part and whether a fraction remains, so
//! each step of the search compares two integers exactly.

use std::cmp::Ordering;

use rust_decimal::Decimal;

use super::super::plan::InputRef;
use super::super::request::Prepared;
use super::Posting;
use crate::core::condition::{cmp_decimal, Cmp, POW10};

/// The bounds of one side, sorted so that the bounds a value satisfies are
/// a prefix.
#[derive(Debug, Clone, Default)]
struct Side {
    /// Threshold and whether it is inclusive, in prefix order; emptied
    /// once sorted when `fixed` holds them all.
    bounds: Vec<(Decimal, bool)>,
    /// The same thresholds as integers at [`Side::scale`], when all fit.
    fixed: Option<Vec<(i128, bool)>>,
    scale: u32,
    /// The posting of each bound, in the same order.
    postings: Vec<Posting>,
}

/// A value at a side's scale: `whole`, plus a fraction when `fraction`
/// (the value lies strictly between `whole` and `whole + 1`).
#[derive(Debug, Clone, Copy)]
struct Scaled {
    whole: i128,
    fraction: bool,
}

/// `v` at `scale`; a value beyond `i128` at that scale is beyond every
/// threshold that fits, and is pinned to the end of the range on its side.
fn scaled(v: Decimal, scale: u32) -> Scaled {
    let (m, s) = (v.mantissa(), v.scale());
    if s <= scale {
        let whole = POW10
            .get((scale - s) as usize)
            .and_then(|p| m.checked_mul(*p))
            .unwrap_or(if m < 0 { i128::MIN } else { i128::MAX });
        Scaled {
            whole,
            fraction: false,
        }
    } else {
        // `s - scale` <= 28: the divisor fits.
        let d = POW10[(s - scale) as usize];
        Scaled {
            whole: m.div_euclid(d),
            fraction: m.rem_euclid(d) != 0,
        }
    }
}

impl Side {
    /// Sorts the bounds: `up` by ascending threshold (lower bounds), else
    /// descending; at one threshold, inclusive bounds first, since a value
    /// equal to the threshold satisfies them and not the strict ones.
    fn sort(&mut self, up: bool) {
        let mut pairs: Vec<((Decimal, bool), Posting)> =
            self.bounds.drain(..).zip(self.postings.drain(..)).collect();
        pairs.sort_by(|((a, ai), _), ((b, bi), _)| {
            let by_value = if up {
                cmp_decimal(*a, *b)
            } else {
                cmp_decimal(*b, *a)
            };
            by_value.then(bi.cmp(ai))
        });
        (self.bounds, self.postings) = pairs.into_iter().unzip();
        self.scale = self
            .bounds
            .iter()
            .map(|(t, _)| t.scale())
            .max()
            .unwrap_or(0);
        self.fixed = self
            .bounds
            .iter()
            .map(|&(t, inclusive)| {
                let p = POW10.get((self.scale - t.scale()) as usize)?;
                Some((t.mantissa().checked_mul(*p)?, inclusive))
            })
            .collect();
        if self.fixed.is_some() {
            self.bounds = Vec::new();
        }
    }

    /// The postings of the bounds `v` satisfies. `beyond`: the order of a
    /// threshold a value is strictly beyond (`Less` for lower bounds).
    fn satisfied(&self, v: Decimal, beyond: Ordering) -> &[Posting] {
        let end = match &self.fixed {
            Some(fixed) => {
                let Scaled { whole, fraction } = scaled(v, self.scale);
                if beyond == Ordering::Less {
                    // t < v, or t = v and inclusive.
                    fixed.partition_point(|&(t, inclusive)| {
                        t < whole || (t == whole && (fraction || inclusive))
                    })
                } else {
                    // t > v, or t = v and inclusive.
                    fixed.partition_point(|&(t, inclusive)| {
                        t > whole || (t == whole && !fraction && inclusive)
                    })
                }
            }
            None => self.bounds.partition_point(|&(t, inclusive)| {
                let ord = cmp_decimal(t, v);
                ord == beyond || (ord == Ordering::Equal && inclusive)
            }),
        };
        &self.postings[..end]
    }
}

/// Empty bounds for every input, in the order of [`position`]: custom
/// attribute slots `0..slots`, then the cart's and the items' inputs.
pub(super) fn every_input(slots: usize) -> Vec<Ranges> {
    (0..slots)
        .map(|s| InputRef::Slot(u32::try_from(s).expect("slots fit u32")))
        .chain([
            InputRef::TotalPrice,
            InputRef::Sku,
            InputRef::Amount,
            InputRef::Price,
            InputRef::Tags,
            InputRef::Currency,
        ])
        .map(Ranges::new)
        .collect()
}

/// The position of an input in [`every_input`].
pub(super) fn position(input: InputRef, slots: usize) -> usize {
    match input {
        InputRef::Slot(s) => s as usize,
        InputRef::TotalPrice => slots,
        InputRef::Sku => slots + 1,
        InputRef::Amount => slots + 2,
        InputRef::Price => slots + 3,
        InputRef::Tags => slots + 4,
        InputRef::Currency => slots + 5,
    }
}

/// Keeps the inputs that have a range condition (only they are searched)
/// and puts their bounds in prefix order, once every rule is added.
pub(super) fn finish(ranges: &mut Vec<Ranges>) {
    ranges.retain(|r| !r.is_empty());
    for r in ranges {
        r.lower.sort(true);
        r.upper.sort(false);
    }
}

/// The range conditions on one input.
#[derive(Debug, Clone)]
pub(super) struct Ranges {
    input: InputRef,
    /// `gt` and `gte`, ascending.
    lower: Side,
    /// `lt` and `lte`, descending.
    upper: Side,
}

impl Ranges {
    fn new(input: InputRef) -> Ranges {
        Ranges {
            input,
            lower: Side::default(),
            upper: Side::default(),
        }
    }

    fn is_empty(&self) -> bool {
        self.lower.postings.is_empty() && self.upper.postings.is_empty()
    }

    /// Adds the bound `value <cmp> threshold`; `false` for `eq`, which is
    /// not a range.
    pub(super) fn add(&mut self, cmp: Cmp, threshold: Decimal, posting: Posting) -> bool {
        let (side, inclusive) = match cmp {
            Cmp::Gt => (&mut self.lower, false),
            Cmp::Gte => (&mut self.lower, true),
            Cmp::Lt => (&mut self.upper, false),
            Cmp::Lte => (&mut self.upper, true),
            Cmp::Eq => return false,
        };
        side.bounds.push((threshold, inclusive));
        side.postings.push(posting);
        true
    }

    /// Passes the postings of every bound some value of the input satisfies.
    pub(super) fn probe(&self, req: &Prepared<'_>, hit: &mut impl FnMut(&[Posting])) {
        let mut extent: Option<(Decimal, Decimal)> = None;
        req.each_value(self.input, |f| {
            if let Some(n) = f.num() {
                extent = Some(match extent {
                    None => (n, n),
                    Some((lo, hi)) => (
                        if cmp_decimal(n, lo) == Ordering::Less {
                            n
                        } else {
                            lo
                        },
                        if cmp_decimal(n, hi) == Ordering::Greater {
                            n
                        } else {
                            hi
                        },
                    ),
                });
            }
        });
        let Some((lo, hi)) = extent else {
            return;
        };
        let lower = self.lower.satisfied(hi, Ordering::Less);
        if !lower.is_empty() {
            hit(lower);
        }
        let upper = self.upper.satisfied(lo, Ordering::Greater);
        if !upper.is_empty() {
            hit(upper);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    fn rules(p: &[Posting]) -> Vec<u32> {
        let mut r: Vec<u32> = p.iter().map(|p| p.rule).collect();
        r.sort_unstable();
        r
    }

    /// Rule `i` has the `i`-th bound.
    fn ranges(bounds: &[(Cmp, &str)]) -> Ranges {
        let mut r = vec![Ranges::new(InputRef::TotalPrice)];
        for ((cmp, t), rule) in bounds.iter().zip(0..) {
            assert!(r[0].add(*cmp, d(t), Posting { rule, bit: 0 }));
        }
        finish(&mut r);
        r.remove(0)
    }

    #[test]
    fn a_value_satisfies_a_prefix_of_each_side() {
        let r = ranges(&[
            (Cmp::Gt, "10"),
            (Cmp::Gte, "10"),
            (Cmp::Gte, "5.5"),
            (Cmp::Lt, "10.0"),
            (Cmp::Lte, "10"),
            (Cmp::Lt, "20"),
        ]);
        let lower = |v| rules(r.lower.satisfied(d(v), Ordering::Less));
        let upper = |v| rules(r.upper.satisfied(d(v), Ordering::Greater));
        assert_eq!(lower("5"), Vec::<u32>::new());
        assert_eq!(lower("5.50"), vec![2]);
        assert_eq!(lower("10.00"), vec![1, 2]);
        assert_eq!(lower("10.01"), vec![0, 1, 2]);
        assert_eq!(upper("10"), vec![4, 5]);
        assert_eq!(upper("9.999"), vec![3, 4, 5]);
        assert_eq!(upper("20"), Vec::<u32>::new());
        assert_eq!(upper("19"), vec![5]);
    }

    #[test]
    fn integers_at_the_sides_scale_agree_with_decimals() {
        let r = ranges(&[
            (Cmp::Gt, "-1.25"),
            (Cmp::Gte, "0"),
            (Cmp::Gte, "2.5"),
            (Cmp::Gt, "2.50"),
            (Cmp::Lt, "-1.2"),
            (Cmp::Lte, "0.00"),
            (Cmp::Lt, "2.5"),
            (Cmp::Lte, "7"),
        ]);
        assert!(r.lower.fixed.is_some() && r.upper.fixed.is_some());
        // The same bounds, compared as decimals.
        let decimals = |side: &Side| {
            let fixed = side.fixed.as_ref().unwrap();
            Side {
                bounds: fixed
                    .iter()
                    .map(|&(t, inclusive)| {
                        (Decimal::from_i128_with_scale(t, side.scale), inclusive)
                    })
                    .collect(),
                fixed: None,
                scale: 0,
                postings: side.postings.clone(),
            }
        };
        let mut slow = r.clone();
        slow.lower = decimals(&r.lower);
        slow.upper = decimals(&r.upper);
        for v in [
            "-2",
            "-1.251",
            "-1.25",
            "-1.249",
            "-1.2",
            "-0.001",
            "0",
            "0.0001",
            "2.49999",
            "2.5",
            "2.500",
            "2.5000001",
            "7",
            "7.000000000000000000000000001",
            "100",
            "-79228162514264337593543950335",
            "79228162514264337593543950335",
        ] {
            for beyond in [Ordering::Less, Ordering::Greater] {
                let side = |r: &Ranges| match beyond {
                    Ordering::Less => rules(r.lower.satisfied(d(v), beyond)),
                    _ => rules(r.upper.satisfied(d(v), beyond)),
                };
                assert_eq!(side(&r), side(&slow), "{v} {beyond:?}");
            }
        }
    }

    #[test]
    fn thresholds_beyond_i128_at_the_scale_are_compared_as_decimals() {
        let r = ranges(&[
            (Cmp::Gt, "79228162514264337593543950335"),
            (Cmp::Gt, "0.0000000000000000000000000001"),
        ]);
        assert!(r.lower.fixed.is_none());
        assert_eq!(rules(r.lower.satisfied(d("1"), Ordering::Less)), vec![1]);
    }

    #[test]
    fn eq_is_not_a_range() {
        let mut r = Ranges::new(InputRef::TotalPrice);
        assert!(!r.add(Cmp::Eq, d("1"), Posting { rule: 0, bit: 0 }));
    }
}
