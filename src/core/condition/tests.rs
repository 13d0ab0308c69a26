use proptest::prelude::*;

use super::*;
use crate::core::campaign::{Condition, ConditionType, Op, ValueType};

fn cond(kind: &str, attribute: &str, op: &str, value_type: &str, value: &str) -> Condition {
    Condition {
        kind: ConditionType::parse(kind),
        attribute: attribute.to_owned(),
        op: Op::parse(op),
        value: value.to_owned(),
        value_type: ValueType::parse(value_type),
        note: None,
        resolve_action: false,
    }
}

/// An input written as text: `-` missing, `[a|b]` a collection (`[]` empty),
/// anything else one value.
fn with_input<R>(spec: &str, f: impl FnOnce(Input<'_>) -> R) -> R {
    if spec == "-" {
        f(Input::Missing)
    } else if let Some(inner) = spec.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        let fields: Vec<Field> = if inner.is_empty() {
            vec![]
        } else {
            inner.split('|').map(Field::new).collect()
        };
        f(Input::Many(&fields))
    } else {
        let field = Field::new(spec);
        f(Input::One(&field))
    }
}

/// One line per case: op, value type, condition value, input, expected.
fn check(cases: &[(&str, &str, &str, &str, bool)]) {
    for &(op, vt, value, input, expected) in cases {
        let c = compile(&cond("custom", "x", op, vt, value), "c")
            .unwrap_or_else(|e| panic!("{op} {value}: {e:?}"));
        let got = with_input(input, |i| c.eval(i));
        assert_eq!(got, expected, "{op} {vt} {value:?} on input {input:?}");
    }
}

#[test]
fn string_ops() {
    check(&[
        ("eq", "STRING", "a", "a", true),
        ("eq", "STRING", "a", "A", false),
        ("eq", "STRING", "a", "-", false),
        ("neq", "STRING", "a", "b", true),
        ("neq", "STRING", "a", "a", false),
        ("neq", "STRING", "a", "-", false),
        ("gt", "STRING", "a", "b", true),
        ("gt", "STRING", "9", "10", false), // lexicographic
        ("gt", "STRING", "a", "-", false),
        ("gte", "STRING", "b", "b", true),
        ("gte", "STRING", "b", "a", false),
        ("lt", "STRING", "b", "a", true),
        ("lt", "STRING", "b", "b", false),
        ("lte", "STRING", "b", "b", true),
        ("lte", "STRING", "b", "c", false),
        ("lte", "STRING", "b", "-", false),
        ("in", "STRING", r#"("a","b")"#, "a", true),
        ("in", "STRING", r#"("a","b")"#, "c", false),
        ("in", "STRING", r#"("a","b")"#, "-", false),
        ("not_in", "STRING", r#"("a","b")"#, "c", true),
        ("not_in", "STRING", r#"("a","b")"#, "a", false),
        ("not_in", "STRING", r#"("a","b")"#, "-", false),
        ("matches", "STRING", "SAVE[0-9]+", "SAVE10", true),
        ("matches", "STRING", "SAVE[0-9]+", "XSAVE10", false), // full match
        ("matches", "STRING", "SAVE[0-9]+", "SAVE10X", false),
        ("matches", "STRING", "SAVE[0-9]+", "-", false),
        ("matches", "STRING", "a|b", "b", true), // alternation is anchored as a whole
        ("not_matches", "STRING", "SAVE[0-9]+", "XSAVE10", true),
        ("not_matches", "STRING", "SAVE[0-9]+", "SAVE1", false),
        ("not_matches", "STRING", "SAVE[0-9]+", "-", false),
        ("contains", "STRING", "vip", "[new|vip]", true),
        ("contains", "STRING", "vip", "[new]", false),
        ("contains", "STRING", "vip", "[]", false),
        ("contains", "STRING", "vip", "vip", true), // a scalar is a collection of one
        ("contains", "STRING", "vip", "-", false),
        ("not_contains", "STRING", "vip", "[new]", true),
        ("not_contains", "STRING", "vip", "[]", true),
        ("not_contains", "STRING", "vip", "[new|vip]", false),
        ("not_contains", "STRING", "vip", "-", false),
    ]);
}

#[test]
fn number_ops() {
    check(&[
        ("eq", "NUMBER", "1", "1.0", true),
        ("eq", "NUMBER", "1", "1.01", false),
        ("eq", "NUMBER", "1", "abc", false),
        ("eq", "NUMBER", "1", "-", false),
        ("neq", "NUMBER", "1", "2", true),
        ("neq", "NUMBER", "1", "1.00", false),
        ("neq", "NUMBER", "1", "abc", false), // unparsable: false for negated ops too
        ("neq", "NUMBER", "1", "-", false),
        ("gt", "NUMBER", "100", "100.01", true),
        ("gt", "NUMBER", "100", "100", false),
        ("gt", "NUMBER", "9", "10", true), // numeric, not lexicographic
        ("gt", "NUMBER", "100", "abc", false),
        ("gte", "NUMBER", "100", "100", true),
        ("gte", "NUMBER", "100", "99.99", false),
        ("gte", "NUMBER", "100", "-", false),
        ("lt", "NUMBER", "-5", "-5.5", true),
        ("lt", "NUMBER", "-5", "-5", false),
        ("lte", "NUMBER", "0.1", "0.10", true),
        ("lte", "NUMBER", "0.1", "0.11", false),
        ("lte", "NUMBER", "0.1", "x", false),
        ("in", "NUMBER", r#"("1","2.5")"#, "2.50", true),
        ("in", "NUMBER", r#"("1","2.5")"#, "3", false),
        ("in", "NUMBER", r#"("1","2.5")"#, "x", false),
        ("not_in", "NUMBER", r#"("1","2.5")"#, "3", true),
        ("not_in", "NUMBER", r#"("1","2.5")"#, "1.0", false),
        ("not_in", "NUMBER", r#"("1","2.5")"#, "x", false),
        ("not_in", "NUMBER", r#"("1","2.5")"#, "-", false),
        ("matches", "NUMBER", "[0-9]{3}", "123", true), // regexes match the text
        ("not_matches", "NUMBER", "[0-9]{3}", "12", true),
        ("contains", "NUMBER", "5", "[5.0|x]", true),
        ("contains", "NUMBER", "5", "[6|x]", false),
        ("not_contains", "NUMBER", "5", "[6|7]", true),
        ("not_contains", "NUMBER", "5", "[6|x]", false), // x cannot be compared
        ("not_contains", "NUMBER", "5", "[5]", false),
    ]);
}

#[test]
fn targets_follow_condition_type() {
    let t = |kind, attr| compile(&cond(kind, attr, "eq", "STRING", "v"), "c").map(|c| c.target);
    assert_eq!(t("cart", "totalPrice").unwrap(), Target::TotalPrice);
    assert_eq!(t("cart", "currency").unwrap(), Target::Currency);
    assert_eq!(t("cartItem", "sku").unwrap(), Target::Sku);
    assert_eq!(t("cartItem", "amount").unwrap(), Target::Amount);
    assert_eq!(t("cartItem", "price").unwrap(), Target::Price);
    assert_eq!(t("cartItem", "tags").unwrap(), Target::Tags);
    assert_eq!(
        t("custom", "anything.at-all").unwrap(),
        Target::Custom("anything.at-all".into())
    );
}

/// Compiles and returns the (field, code) of every problem.
fn problems(c: &Condition) -> Vec<(String, String)> {
    compile(c, "rules[0].when[0].conditions[1]")
        .unwrap_err()
        .into_iter()
        .map(|e| (e.field, e.code))
        .collect()
}

#[test]
fn every_problem_is_reported_with_its_path() {
    let p = |f: &str, c: &str| (format!("rules[0].when[0].conditions[1].{f}"), c.to_owned());
    assert_eq!(
        problems(&cond("cart", "sku", "eq", "STRING", "x")),
        vec![p("attribute", "invalid_attribute")]
    );
    assert_eq!(
        problems(&cond("cartItem", "color", "eq", "STRING", "x")),
        vec![p("attribute", "invalid_attribute")]
    );
    assert_eq!(
        problems(&cond("custom", "", "eq", "STRING", "x")),
        vec![p("attribute", "required")]
    );
    assert_eq!(
        problems(&cond("basket", "x", "eq", "STRING", "x")),
        vec![p("type", "invalid_enum")]
    );
    assert_eq!(
        problems(&cond("custom", "x", "like", "STRING", "x")),
        vec![p("op", "invalid_enum")]
    );
    assert_eq!(
        problems(&cond("custom", "x", "eq", "DATE", "x")),
        vec![p("valueType", "invalid_enum")]
    );
    assert_eq!(
        problems(&cond("custom", "x", "gt", "NUMBER", "ten")),
        vec![p("value", "invalid_number")]
    );
    assert_eq!(
        problems(&cond("custom", "x", "in", "STRING", "a,b")),
        vec![p("value", "in_list_syntax")]
    );
    assert_eq!(
        problems(&cond("custom", "x", "in", "NUMBER", r#"("1","x")"#)),
        vec![p("value", "invalid_number")]
    );
    assert_eq!(
        problems(&cond("custom", "x", "matches", "STRING", "(")),
        vec![p("value", "invalid_regex")]
    );
    // Several problems at once.
    assert_eq!(
        problems(&cond("basket", "x", "like", "DATE", "x")),
        vec![
            p("type", "invalid_enum"),
            p("valueType", "invalid_enum"),
            p("op", "invalid_enum")
        ]
    );
    let long_list = list::format_list(&(0..51).map(|i| i.to_string()).collect::<Vec<_>>());
    assert_eq!(
        problems(&cond("custom", "x", "in", "STRING", &long_list)),
        vec![p("value", "in_list_too_long")]
    );
}

#[test]
fn huge_regex_is_rejected_not_compiled_forever() {
    let c = cond("custom", "x", "matches", "STRING", "(a{1000}){1000}");
    assert_eq!(problems(&c)[0].1, "invalid_regex");
    let c = cond(
        "custom",
        "x",
        "matches",
        "STRING",
        &"a".repeat(MAX_PATTERN_LEN + 1),
    );
    assert_eq!(problems(&c)[0].1, "too_long");
}

fn decimal() -> impl Strategy<Value = Decimal> {
    (any::<i64>(), 0u32..10).prop_map(|(m, s)| Decimal::new(m, s))
}

/// Any decimal: a mantissa of up to 96 bits at any scale.
fn any_decimal() -> impl Strategy<Value = Decimal> {
    let mantissa = prop_oneof![
        any::<i64>().prop_map(i128::from),
        (-(1i128 << 96) + 1)..(1i128 << 96),
        Just((1i128 << 96) - 1),
        Just(-(1i128 << 96) + 1),
        Just(0i128),
    ];
    (mantissa, 0u32..=28).prop_map(|(m, s)| Decimal::from_i128_with_scale(m, s))
}

proptest! {
    #[test]
    fn cmp_decimal_is_decimal_order(a in any_decimal(), b in any_decimal()) {
        prop_assert_eq!(cmp_decimal(a, b), a.cmp(&b));
        // Equal values at different scales (1.5 and 1.50).
        prop_assert_eq!(cmp_decimal(a, a.normalize()), std::cmp::Ordering::Equal);
    }

    #[test]
    fn gte_is_gt_or_eq(a in decimal(), b in decimal()) {
        let eval = |op: &str| {
            let c = compile(&cond("custom", "x", op, "NUMBER", &b.to_string()), "c").unwrap();
            c.eval(Input::One(&Field::new(a.to_string())))
        };
        prop_assert_eq!(eval("gte"), eval("gt") || eval("eq"));
        prop_assert_eq!(eval("lte"), eval("lt") || eval("eq"));
        prop_assert_eq!(eval("neq"), !eval("eq"));
    }

    #[test]
    fn not_in_is_not_in_when_present(values in proptest::collection::vec("[a-c]{0,2}", 1..5), input in "[a-c]{0,2}") {
        let list = list::format_list(&values);
        let eval = |op: &str| {
            let c = compile(&cond("custom", "x", op, "STRING", &list), "c").unwrap();
            c.eval(Input::One(&Field::new(input.as_str())))
        };
        prop_assert_eq!(eval("not_in"), !eval("in"));
        prop_assert_eq!(eval("in"), values.contains(&input));
    }

    #[test]
    fn number_in_matches_decimal_equality(values in proptest::collection::vec(decimal(), 1..5), input in decimal()) {
        let list = list::format_list(&values.iter().map(ToString::to_string).collect::<Vec<_>>());
        let c = compile(&cond("custom", "x", "in", "NUMBER", &list), "c").unwrap();
        prop_assert_eq!(c.eval(Input::One(&Field::new(input.to_string()))), values.contains(&input));
    }

    #[test]
    fn negated_collection_ops_are_the_complement_when_all_comparable(tags in proptest::collection::vec("[a-c]", 0..4), v in "[a-c]") {
        let fields: Vec<Field> = tags.iter().map(|t| Field::new(t.as_str())).collect();
        let contains = compile(&cond("cartItem", "tags", "contains", "STRING", &v), "c").unwrap();
        let not_contains = compile(&cond("cartItem", "tags", "not_contains", "STRING", &v), "c").unwrap();
        prop_assert_eq!(not_contains.eval(Input::Many(&fields)), !contains.eval(Input::Many(&fields)));
        prop_assert_eq!(contains.eval(Input::Many(&fields)), tags.contains(&v));
    }
}

#[test]
fn a_pattern_invalid_alone_is_rejected_though_valid_once_anchored() {
    // `^(?:a)|(b)$` is a valid regex, but `a)|(b` is not a pattern: the
    // anchoring must not close its groups for it. (Found by fuzzing.)
    for pattern in ["a)|(b", ")(", "x)|(?:y"] {
        let c = cond("custom", "x", "matches", "STRING", pattern);
        let found = problems(&c);
        let expected = "rules[0].when[0].conditions[1].value".to_owned();
        assert_eq!(
            found,
            vec![(expected, "invalid_regex".to_owned())],
            "{pattern}"
        );
        assert!(compile_regex(pattern).is_err(), "{pattern}");
    }
    // Valid patterns, big or small, still compile.
    assert!(compile_regex("a|b").is_ok());
    assert!(compile_regex("(a|b)(c)").is_ok());
    assert!(compile_regex("[a-z]{1,200}").is_ok());
}
