use super::*;
use crate::core::consent::ContentType;
use crate::ErrorKind;
use chrono::DateTime;
use serde_json::json;

fn parse(q: &[(&str, &str)]) -> Result<ContentQuery> {
    ContentQuery::from_pairs(q.iter().copied())
}

#[allow(clippy::needless_pass_by_value)]
fn rec(id: &str, data: Value) -> ContentRecord {
    ContentRecord {
        id: id.into(),
        project_id: "p".into(),
        content_type: ContentType::Consent,
        version: 1,
        seq: 1,
        created_by: "a".into(),
        last_modified_by: "a".into(),
        created_date: DateTime::UNIX_EPOCH,
        last_modified_date: DateTime::UNIX_EPOCH,
        data: data.as_object().cloned().unwrap_or_default(),
    }
}

#[test]
fn parses_every_parameter() {
    let q = parse(&[
        ("data.status", "PUBLISHED"),
        ("data.purposes", "marketing"),
        ("page", "2"),
        ("size", "50"),
        ("sort", "data.revision,desc"),
        ("sort", "data.name"),
    ])
    .unwrap();
    assert_eq!(
        q,
        ContentQuery::default()
            .with_filter("status", "PUBLISHED")
            .with_filter("purposes", "marketing")
            .with_page(2, 50)
            .with_sort("revision", SortDirection::Desc)
            .with_sort("name", SortDirection::Asc)
    );
    assert_eq!(parse(&[]).unwrap(), ContentQuery::default());
    assert_eq!(ContentQuery::default().size, 20);
}

#[test]
fn rejects_bad_values_with_400_and_lists_all() {
    for (pairs, code) in [
        (&[("size", "0")][..], "invalid_page_size"),
        (&[("size", "1001")][..], "invalid_page_size"),
        (&[("size", "ten")][..], "invalid_page_size"),
        (&[("page", "-1")][..], "invalid_page"),
        (&[("sort", "name")][..], "invalid_sort"),
        (&[("sort", "data.name,up")][..], "invalid_sort"),
        (&[("data.a-b", "x")][..], "invalid_filter"),
        (&[("data.", "x")][..], "invalid_filter"),
        (&[("date.status", "x")][..], "unknown_parameter"),
        (&[("page", "1"), ("page", "2")][..], "duplicate_parameter"),
    ] {
        let err = parse(pairs).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadRequest, "{pairs:?}");
        assert_eq!(err.code(), code, "{pairs:?}");
    }
    let err = parse(&[("size", "0"), ("page", "x"), ("sort", "y")]).unwrap_err();
    assert_eq!(err.fields().len(), 3);
    assert!(parse(&[("size", "1000"), ("size", "1")]).is_err());
    assert!(parse(&[("size", "1000")]).is_ok());
    let many: Vec<(&str, &str)> = (0..=MAX_FILTERS).map(|_| ("data.a", "1")).collect();
    assert_eq!(parse(&many).unwrap_err().code(), "too_many_filters");
}

#[test]
fn check_catches_hand_built_queries() {
    assert!(ContentQuery::default().check().is_ok());
    assert_eq!(
        ContentQuery::default()
            .with_page(0, 0)
            .check()
            .unwrap_err()
            .code(),
        "invalid_page_size"
    );
    assert_eq!(
        ContentQuery::default()
            .with_filter("x') OR 1=1 --", "1")
            .check()
            .unwrap_err()
            .code(),
        "invalid_filter"
    );
}

#[test]
fn filter_semantics() {
    let r = rec(
        "1",
        json!({"s": "PUBLISHED", "n": 2, "f": 2.5, "b": true, "arr": ["a", "b", 3],
               "nul": null, "obj": {"s": "PUBLISHED"}, "empty": ""}),
    );
    let m = |a: &str, v: &str| ContentQuery::default().with_filter(a, v).matches(&r);
    assert!(m("s", "PUBLISHED"));
    assert!(!m("s", "published"));
    assert!(m("n", "2") && m("n", "2.0") && m("n", "2.00"));
    assert!(!m("n", " 2") && !m("n", "2e0") && !m("n", "+2"));
    assert!(m("f", "2.5") && !m("f", "2.50001"));
    assert!(m("b", "true") && !m("b", "True") && !m("b", "1"));
    assert!(m("arr", "a") && m("arr", "3") && !m("arr", "c"));
    assert!(!m("nul", "null") && !m("nul", "") && !m("missing", ""));
    assert!(!m("obj", "PUBLISHED"));
    assert!(m("empty", ""));
    let t = rec(
        "2",
        json!({"at": "2026-01-01T03:00:00.000000Z", "raw": "2026-01-01T10:00:00+07:00"}),
    );
    let at = |a: &str, v: &str| ContentQuery::default().with_filter(a, v).matches(&t);
    for same in [
        "2026-01-01T03:00:00.000000Z",
        "2026-01-01T03:00:00Z",
        "2026-01-01T03:00:00.000Z",
        "2026-01-01T10:00:00+07:00",
        "2026-01-01T03:00:00.0000009Z",
        "2025-12-31T22:00:00-05:00",
        "2026-01-01T10:00:00 07:00",
    ] {
        assert!(at("at", same), "{same}");
    }
    assert!(!at("at", "2026-01-01T03:00:01Z") && !at("at", "2026-01-01"));
    assert!(
        at("raw", "2026-01-01T10:00:00+07:00"),
        "extras match as sent"
    );
    let both = ContentQuery::default()
        .with_filter("arr", "a")
        .with_filter("arr", "b");
    assert!(both.matches(&r));
    assert!(!both.with_filter("s", "DRAFT").matches(&r));
}

#[test]
fn sort_semantics_nulls_last_both_ways() {
    let rs = vec![
        rec("a", json!({"v": "b"})),
        rec("b", json!({"v": null})),
        rec("c", json!({"v": 10})),
        rec("d", json!({"v": 9.5})),
        rec("e", json!({"v": true})),
        rec("f", json!({})),
        rec("g", json!({"v": "B"})),
        rec("h", json!({"v": false})),
        rec("i", json!({"v": ["x"]})),
    ];
    let order = |dir| {
        let q = ContentQuery::default().with_sort("v", dir);
        let mut v = rs.clone();
        v.sort_by(|a, b| q.compare(a, b));
        v.into_iter().map(|r| r.id).collect::<String>()
    };
    assert_eq!(order(SortDirection::Asc), "dcgahebfi");
    assert_eq!(order(SortDirection::Desc), "ehagcdbfi");
}
