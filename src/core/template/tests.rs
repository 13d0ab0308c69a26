use std::borrow::Cow;
use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

/// The resolver of the table: a few names, one of them bound to "".
fn lookup(name: &str) -> Option<Cow<'static, str>> {
    match name {
        "a" => Some(Cow::Borrowed("1")),
        "b" => Some(Cow::Borrowed("two")),
        "userId" => Some(Cow::Borrowed("u-42")),
        "empty" => Some(Cow::Borrowed("")),
        "x.y-z_1" => Some(Cow::Owned(String::from("dotted"))),
        _ => None,
    }
}

/// Parses and renders `input`; `expected` is the rendering, or
/// `error <code>: <message>`. Also checks that printing round-trips.
fn check(input: &str, expected: &str) {
    let actual = match Template::parse(input) {
        Ok(template) => {
            assert_eq!(
                Template::parse(&template.to_string()).as_ref(),
                Ok(&template),
                "{input:?} does not round-trip"
            );
            match template.render(&lookup) {
                Ok(text) => text,
                Err(e) => format!("error {}: {e}", e.code()),
            }
        }
        Err(e) => format!("error {}: {e}", e.code()),
    };
    assert_eq!(actual, expected, "input: {input:?}");
}

#[test]
fn table() {
    let cases: &[(&str, &str)] = &[
        ("", ""),
        ("plain", "plain"),
        ("${a}", "1"),
        ("${a}${b}", "1two"),
        ("k:${userId}:${a}:${userId}", "k:u-42:1:u-42"),
        ("[${empty}]", "[]"),
        ("${x.y-z_1}", "dotted"),
        ("$", "$"),
        ("$$", "$$"),
        ("US$ 5", "US$ 5"),
        ("$${a}", "$1"),
        ("$ {a}", "$ {a}"),
        ("{a}}", "{a}}"),
        ("${a}}", "1}"),
        ("é${a}é", "é1é"),
        (
            "${",
            "error template_syntax: unterminated `${` at byte 0: a placeholder ends with `}`",
        ),
        (
            "ab${a",
            "error template_syntax: unterminated `${` at byte 2: a placeholder ends with `}`",
        ),
        (
            "${a}${",
            "error template_syntax: unterminated `${` at byte 4: a placeholder ends with `}`",
        ),
        (
            "x${}",
            "error template_syntax: empty placeholder `${}` at byte 1",
        ),
        (
            "${ a }",
            "error template_syntax: invalid name ` a ` at byte 0: a name is 1 to 128 characters \
             of A-Z a-z 0-9 _ . -, starting with a letter or _",
        ),
        (
            "é${1st}",
            "error template_syntax: invalid name `1st` at byte 2: a name is 1 to 128 characters \
             of A-Z a-z 0-9 _ . -, starting with a letter or _",
        ),
        (
            "${a${b}}",
            "error template_syntax: invalid name `a${b` at byte 0: a name is 1 to 128 characters \
             of A-Z a-z 0-9 _ . -, starting with a letter or _",
        ),
        (
            "${nobody}",
            "error template_unresolved: no value for `${nobody}`",
        ),
        (
            "${a}:${nobody}:${other}",
            "error template_unresolved: no value for `${nobody}`",
        ),
    ];
    for (input, expected) in cases {
        check(input, expected);
    }
}

#[test]
fn names_are_unique_in_order_of_first_use() {
    let t = Template::parse("${b}-${a}-${b}-${c}").unwrap();
    assert_eq!(t.names().collect::<Vec<_>>(), ["b", "a", "c"]);
    assert!(t.has_placeholders());
    let plain = Template::parse("no $ placeholders {here}").unwrap();
    assert_eq!(plain.names().count(), 0);
    assert!(!plain.has_placeholders());
}

#[test]
fn name_rule() {
    let longest = format!("a{}", "b".repeat(MAX_NAME_LEN - 1));
    assert!(is_valid_name(&longest));
    assert!(!is_valid_name(&format!("{longest}c")));
    for ok in ["a", "_", "A9", "a.b", "a-b", "_x_"] {
        assert!(is_valid_name(ok), "{ok}");
    }
    for bad in ["", "9", ".a", "-a", "a b", "a$", "é", "a/b", "a}"] {
        assert!(!is_valid_name(bad), "{bad}");
    }
}

#[test]
fn length_budget() {
    let at_limit = "x".repeat(MAX_TEMPLATE_LEN);
    assert!(Template::parse(&at_limit).is_ok());
    let err = Template::parse(&format!("{at_limit}x")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the template is 4097 bytes long; at most 4096 are allowed"
    );
    assert_eq!(err.code(), "template_too_long");
}

#[test]
fn into_crate_error() {
    let err: Error = Template::parse("${").unwrap_err().into();
    assert_eq!(err.kind(), ErrorKind::Validation);
    assert_eq!(err.code(), "template_syntax");
    let err: Error = Template::parse(&"x".repeat(MAX_TEMPLATE_LEN + 1))
        .unwrap_err()
        .into();
    assert_eq!(err.kind(), ErrorKind::LimitExceeded);
    let unresolved = Template::parse("${nope}").unwrap().render(&lookup);
    let err: Error = unresolved.unwrap_err().into();
    assert_eq!(err.kind(), ErrorKind::Validation);
    assert_eq!(err.code(), "template_unresolved");
    assert_eq!(err.message(), "no value for `${nope}`");
}

#[test]
fn resolver_may_borrow_from_its_environment() {
    let values: HashMap<String, String> = [("k".to_owned(), "v".to_owned())].into();
    let t = Template::parse("${k}!").unwrap();
    let out = t
        .render(&|name| values.get(name).map(|v| Cow::Borrowed(v.as_str())))
        .unwrap();
    assert_eq!(out, "v!");
}

/// A template as parts: literal text that never contains `${`, or names.
fn parts() -> impl Strategy<Value = Vec<Result<String, String>>> {
    let text = "[a-z${} $é]{1,6}".prop_filter("no `${` in text", |t| !t.contains("${"));
    let name = "[A-Za-z_][A-Za-z0-9_.-]{0,8}";
    prop::collection::vec(prop_oneof![text.prop_map(Ok), name.prop_map(Err)], 0..8)
}

proptest! {
    #[test]
    fn render_equals_reference_substitution(
        parts in parts(),
        values in prop::collection::hash_map("[A-Za-z_][A-Za-z0-9_.-]{0,8}", "[ -~]{0,5}", 0..10),
    ) {
        let mut source = String::new();
        let mut expected = Some(String::new());
        for part in &parts {
            match part {
                Ok(text) => {
                    source.push_str(text);
                    if let Some(e) = expected.as_mut() { e.push_str(text); }
                }
                Err(name) => {
                    source.push_str("${");
                    source.push_str(name);
                    source.push('}');
                    match (values.get(name), expected.as_mut()) {
                        (Some(v), Some(e)) => e.push_str(v),
                        _ => expected = None,
                    }
                }
            }
        }
        // Adjacent texts may join into a `${` (`a$` + `{b`), which then is
        // not text; leave those inputs to the other tests.
        let runs: Vec<String> = parts
            .split(Result::is_err)
            .map(|run| run.iter().filter_map(|p| p.as_ref().ok().map(String::as_str)).collect())
            .collect();
        prop_assume!(runs.iter().all(|run| !run.contains("${")));
        let template = Template::parse(&source).expect("generated templates are valid");
        let rendered = template.render(&|n| values.get(n).map(|v| Cow::Borrowed(v.as_str())));
        prop_assert_eq!(rendered.ok(), expected);
        prop_assert_eq!(template.to_string(), source);
    }

    #[test]
    fn parse_never_panics(s in ".*") {
        if let Ok(t) = Template::parse(&s) {
            prop_assert_eq!(t.to_string(), s);
        }
    }

    #[test]
    fn parse_never_panics_on_template_alphabet(s in "[a${}. 1_-]{0,40}") {
        if let Ok(t) = Template::parse(&s) {
            prop_assert_eq!(t.to_string(), s);
        }
    }
}

fn key_of(template: &Template, a: &str, b: &str) -> String {
    template
        .render_key(&|n| match n {
            "a" => Some(Cow::Owned(a.to_owned())),
            "b" => Some(Cow::Owned(b.to_owned())),
            _ => None,
        })
        .unwrap()
}

#[test]
fn quota_keys_escape_what_would_end_a_value() {
    let t = Template::parse("${a}-${b}").unwrap();
    assert_eq!(key_of(&t, "P-X", "u1"), "P%2DX-u1");
    assert_eq!(key_of(&t, "P", "X-u1"), "P-X-u1");
    assert_eq!(key_of(&t, "50%", "u"), "50%25-u");
    // The last value, and values holding nothing to escape, are as sent.
    assert_eq!(key_of(&t, "FREEBIE", "CASE-1%"), "FREEBIE-CASE-1%");
    // Multi-byte text characters are escaped byte by byte.
    let t = Template::parse("${a}→${b}").unwrap();
    assert_eq!(key_of(&t, "x→y", "z"), "x%E2%86%92y→z");
    // A hex digit in the text: escapes are read as a whole.
    let t = Template::parse("k${a}4${b}").unwrap();
    assert_eq!(key_of(&t, "4", "x"), "k%344x");
    // Case is kept: `save100` and `SAVE100` are two keys.
    let t = Template::parse("promo:${a}:${b}").unwrap();
    assert_ne!(key_of(&t, "save100", "u"), key_of(&t, "SAVE100", "u"));
    assert!(!t.has_adjacent_placeholders() && !t.key_text_has_percent());
    assert!(Template::parse("x${a}${b}")
        .unwrap()
        .has_adjacent_placeholders());
    assert!(Template::parse("${a}%${b}").unwrap().key_text_has_percent());
}

proptest! {
    /// Distinct values never render the same key.
    #[test]
    fn quota_keys_are_injective(
        t in prop::sample::select(vec![
            "${a}-${b}", "${a}:${b}:x", "k${a}4${b}", "${a}ab${b}", "-${a}--${b}-",
            "${a}A${b}2", "${a}2${b}", "${b}-${a}-${b}",
        ]),
        a1 in "[abAP4X2%:-]{0,5}", b1 in "[abAP4X2%:-]{0,5}",
        a2 in "[abAP4X2%:-]{0,5}", b2 in "[abAP4X2%:-]{0,5}",
    ) {
        let t = Template::parse(t).unwrap();
        let same = key_of(&t, &a1, &b1) == key_of(&t, &a2, &b2);
        prop_assert_eq!(same, (a1, b1) == (a2, b2));
    }
}
