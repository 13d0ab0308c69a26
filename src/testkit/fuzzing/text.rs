//! Harnesses of the text languages: formulas, conditions and their lists.

use serde_json::json;

use super::head_and_pairs;
use crate::core::campaign::{Condition, Op};
use crate::core::condition::list::{format_list, parse_list};
use crate::core::condition::{self, CompiledCondition, Field, Input, Test, REGEX_SIZE_LIMIT};
use crate::core::formula::{Formula, Lookup, MAX_FORMULA_LEN};
use crate::core::template::is_valid_name;

/// Parses line 1 as a formula and evaluates it with the `name=value`
/// bindings of the other lines.
///
/// Invariants: names are valid and listed once; evaluating twice gives the
/// same result; the canonical form parses back to itself and evaluates to
/// the same result; a formula with names fails when none resolves, and one
/// without names does not depend on the bindings.
pub fn formula(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (source, vars) = head_and_pairs(text);
    let resolve = |name: &str| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map_or(Lookup::Missing, |(_, v)| Lookup::parse(v))
    };
    let f = match Formula::parse(source) {
        Ok(f) => f,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let names: Vec<&str> = f.names().collect();
    for (i, name) in names.iter().enumerate() {
        assert!(is_valid_name(name), "invalid name {name:?}");
        assert!(!names[..i].contains(name), "{name:?} listed twice");
    }
    let first = f.eval(&resolve);
    let second = f.eval(&resolve);
    assert_eq!(first, second, "two evaluations of {source:?} differ");
    // Same value *and* scale: `1.0` and `1` are equal Decimals.
    let shown = |r: &Result<_, _>| r.as_ref().map(ToString::to_string).map_err(|_| ());
    if let Err(e) = &first {
        let _ = e.to_string();
    }
    let canonical = f.to_string();
    if canonical.len() <= MAX_FORMULA_LEN {
        let again = Formula::parse(&canonical)
            .unwrap_or_else(|e| panic!("canonical form {canonical:?} does not parse: {e}"));
        assert_eq!(again.to_string(), canonical, "canonical form is not stable");
        assert_eq!(
            shown(&again.eval(&resolve)),
            shown(&first),
            "{canonical:?} evaluates unlike {source:?}"
        );
    }
    let unbound = f.eval(&|_| Lookup::Missing);
    if names.is_empty() {
        assert_eq!(
            shown(&unbound),
            shown(&first),
            "no names, yet bindings matter"
        );
    } else {
        assert!(unbound.is_err(), "{source:?} evaluated with no names bound");
    }
}

/// The op that holds exactly when `op` does not, on one comparable value.
fn twin(op: &str) -> &'static str {
    match op {
        "eq" => "neq",
        "neq" => "eq",
        "gt" => "lte",
        "lte" => "gt",
        "gte" => "lt",
        "lt" => "gte",
        "in" => "not_in",
        "not_in" => "in",
        "matches" => "not_matches",
        "not_matches" => "matches",
        "contains" => "not_contains",
        _ => "contains",
    }
}

fn build_condition(op: &str, selector: u8, value: &str) -> Condition {
    let (kind, attribute) = match (selector % 3, (selector / 3) % 4) {
        (0, i) => (
            "cart",
            ["totalPrice", "currency", "totalPrice", "bogus"][usize::from(i)],
        ),
        (1, i) => (
            "cartItem",
            ["sku", "amount", "price", "tags"][usize::from(i)],
        ),
        _ => ("custom", "a"),
    };
    let value_type = if selector & 0x80 == 0 {
        "STRING"
    } else {
        "NUMBER"
    };
    serde_json::from_value(json!({
        "type": kind, "attribute": attribute, "op": op, "value": value, "valueType": value_type
    }))
    .expect("a well-formed condition")
}

/// Compiles one condition (op, type and valueType chosen by the first two
/// bytes, the value on the first line) and evaluates it on the values of
/// the other lines; also parses the whole text as an `in` list.
///
/// Invariants: an op and its negation compile alike and, on one comparable
/// value, exactly one holds (both fail on an incomparable or missing one);
/// a collection of one value is that value; a regex that compiles is a
/// valid pattern on its own, and a full match is a match; every value of an
/// `in` list is in its set, and a list prints back to itself.
pub fn condition(data: &[u8]) {
    let [op_byte, selector, rest @ ..] = data else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    list_round_trip(text);
    let op = Op::WIRE[usize::from(*op_byte) % Op::WIRE.len()];
    let mut lines = text.split('\n');
    let value = lines.next().unwrap_or_default();
    let fields: Vec<Field<'_>> = lines.map(Field::new).collect();

    let compiled = condition::compile(&build_condition(op, *selector, value), "c");
    let negation = condition::compile(&build_condition(twin(op), *selector, value), "c");
    let (cc, neg) = match (compiled, negation) {
        (Ok(cc), Ok(neg)) => (cc, neg),
        (Err(problems), Err(_)) => {
            assert!(!problems.is_empty(), "failed with no problem");
            return;
        }
        (a, b) => panic!(
            "{op} and {} compile differently on {value:?}: {:?} / {:?}",
            twin(op),
            a.err(),
            b.err()
        ),
    };
    assert!(!cc.eval(Input::Missing) && !neg.eval(Input::Missing));
    for f in &fields {
        let one = cc.eval(Input::One(f));
        assert_eq!(one, cc.eval(Input::Many(std::slice::from_ref(f))));
        if cc.test.check(f).is_some() {
            assert_ne!(
                one,
                neg.eval(Input::One(f)),
                "{op} {value:?} on {:?}",
                f.text()
            );
        } else {
            assert!(
                !one && !neg.eval(Input::One(f)),
                "incomparable value passed"
            );
        }
    }
    if matches!(
        op,
        "eq" | "neq" | "in" | "not_in" | "matches" | "not_matches"
    ) {
        let (a, b) = (
            cc.eval(Input::Many(&fields)),
            neg.eval(Input::Many(&fields)),
        );
        assert!(!(a && b), "{op} and its negation both hold on a collection");
    }
    check_test(&cc, op, value, &fields);
}

fn check_test(cc: &CompiledCondition, op: &str, value: &str, fields: &[Field<'_>]) {
    match &cc.test {
        Test::Regex(re) => {
            let plain = regex::RegexBuilder::new(value)
                .size_limit(REGEX_SIZE_LIMIT)
                .build();
            assert!(
                !matches!(plain, Err(regex::Error::Syntax(_))),
                "pattern {value:?} is invalid on its own, yet compiled"
            );
            for f in fields {
                if let Ok(plain) = &plain {
                    if re.is_match(f.text()) {
                        assert!(plain.is_match(f.text()), "full match without a match");
                    }
                }
            }
        }
        Test::StrSet(_) | Test::NumSet(_) => {
            let values = parse_list(value).expect("a compiled list parses");
            for v in &values {
                assert_eq!(cc.test.check(&Field::new(v.as_str())), Some(true), "{v:?}");
            }
        }
        Test::Str(..) | Test::Num(..) => {
            if matches!(
                op,
                "eq" | "neq" | "gte" | "lte" | "contains" | "not_contains"
            ) {
                assert_eq!(cc.test.check(&Field::new(value)), Some(true), "{value:?}");
            }
        }
    }
}

fn list_round_trip(text: &str) {
    match parse_list(text) {
        Ok(values) => {
            let printed = format_list(&values);
            assert_eq!(parse_list(&printed).as_ref(), Ok(&values), "{printed:?}");
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}
