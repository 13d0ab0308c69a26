//! Lists equal to the memory store's for the same records and queries: a
//! table of edge cases (numbers equal by value, both zeros, integers no
//! double holds, arrays, nested arrays, objects, code-point order) and a
//! proptest of random records, versions and queries.

use std::sync::Arc;

use accord::consent::{ContentQuery, ContentRecord};
use accord::store::memory::MemoryStore;
use accord::store::{ConsentStore, ContentStore, Page, SortDirection};
use chrono::Duration;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};

use super::store::{project, write, T};
use super::t0;

/// A content write of a world: a record's creation, or a replace of it.
#[derive(Debug, Clone)]
struct Step {
    id: String,
    data: Value,
    /// Seconds after [`t0`]; equal times make the `id` tie-break matter.
    second: i64,
    replace: bool,
}

/// Applies the steps to a store, in a project.
async fn load<S: ConsentStore>(store: &S, project: &str, steps: &[Step]) {
    for s in steps {
        let w = write(
            project,
            &s.id,
            s.data.clone(),
            t0() + Duration::seconds(s.second),
        );
        if s.replace {
            let current = store
                .content(project, T, &s.id)
                .await
                .unwrap()
                .expect("replace of a created record");
            store.replace_content(&w, current.version).await.unwrap();
        } else {
            store.insert_content(&w).await.unwrap();
        }
    }
}

/// A page without `seq`s (each store counts its own) and without the
/// project (each world has its own).
fn comparable(mut page: Page<ContentRecord>) -> Page<ContentRecord> {
    for r in &mut page.items {
        r.seq = 0;
        r.project_id.clear();
    }
    page
}

/// The lists of `store` and of the memory store over the same steps, for
/// each query; `Err` names the first difference.
async fn compare_lists<S: ConsentStore>(
    store: &S,
    steps: &[Step],
    queries: &[ContentQuery],
) -> Result<(), String> {
    let (p, reference) = (project(), MemoryStore::new());
    load(store, &p, steps).await;
    load(&reference, &p, steps).await;
    for q in queries {
        let got = comparable(store.list_content(&p, T, q).await.unwrap());
        let want = comparable(reference.list_content(&p, T, q).await.unwrap());
        if got != want {
            let ids = |page: &Page<ContentRecord>| {
                page.items.iter().map(|r| r.id.clone()).collect::<Vec<_>>()
            };
            return Err(format!(
                "query {q:?}:\n  store  total {} {:?}\n  memory total {} {:?}\n  store  {:?}\n  memory {:?}",
                got.total,
                ids(&got),
                want.total,
                ids(&want),
                got.items,
                want.items
            ));
        }
    }
    Ok(())
}

fn create(id: &str, second: i64, data: Value) -> Step {
    Step {
        id: id.to_owned(),
        data,
        second,
        replace: false,
    }
}

/// Hand-picked values where a translation to SQL could go wrong.
pub async fn list_matches_memory_table<S: ConsentStore + 'static>(store: Arc<S>) {
    let big_f64 = 9_007_199_254_740_992.0_f64; // 2^53, a double
    let mut steps = vec![
        create(
            "r01",
            0,
            json!({"v": 2, "s": "b", "t": ["x", 2.5, true], "w": 1}),
        ),
        create("r02", 0, json!({"v": 2.0, "s": "B", "t": "x"})),
        create("R03", 0, json!({"v": -0.0, "s": "", "t": [["x"]]})),
        create("r04", 1, json!({"v": 0, "s": "é", "t": {"x": 1}})),
        create(
            "r05",
            1,
            json!({"v": u64::MAX, "s": "a\u{10000}", "t": [2]}),
        ),
        create(
            "r06",
            1,
            json!({"v": 9_007_199_254_740_993_i64, "s": "a\u{ffff}"}),
        ),
        create("r07", 2, json!({"v": big_f64, "s": "A"})),
        create("r08", 2, json!({"v": 0.1, "s": "2"})),
        create(
            "r09",
            2,
            json!({"v": 0.300_000_000_000_000_04, "s": "true"}),
        ),
        create("_10", 3, json!({"v": 1e20, "s": "-0"})),
        create("r11", 3, json!({"v": true, "t": [false, null]})),
        create("r12", 3, json!({"v": false, "t": []})),
        create("r13", 4, json!({"v": null, "s": null})),
        create("r14", 4, json!({})),
        create("r15", 4, json!({"v": "2", "t": ["2.0"]})),
        create("r16", 5, json!({"v": [2], "s": ["b"]})),
        create("r17", 5, json!({"v": {"a": 1}, "s": {"b": "b"}})),
        create("r18", 5, json!({"v": -5, "s": " b"})),
        create("r19", 6, json!({"v": -5.5, "s": "b "})),
        create("r20", 6, json!({"v": 1e-7, "s": "\u{7f}"})),
        create("r21", 6, json!({"v": "true", "s": "ab"})),
        create("r22", 6, json!({"v": "-0", "s": "a"})),
        create("r23", 7, json!({"v": -1e-30, "s": "x\"y"})),
        create("r24", 7, json!({"v": 1e-30, "s": "x\\y"})),
        create("r25", 7, json!({"v": i64::MIN, "s": "Z"})),
    ];
    // Versions that a list must not see: r01 was "old" before, r02 only
    // becomes "B" now.
    steps.insert(1, create("r26", 0, json!({"v": 3, "s": "old"})));
    steps.push(Step {
        replace: true,
        ..create("r26", 9, json!({"v": 4, "s": "new", "t": ["y"]}))
    });
    steps.push(Step {
        replace: true,
        ..create("r26", 9, json!({"v": 2.5, "s": "newer", "t": ["x"]}))
    });

    let mut queries = Vec::new();
    for v in [
        "2",
        "2.0",
        "2.00",
        "-0",
        "0",
        "0.0",
        "18446744073709551615",
        "9007199254740993",
        "9007199254740992",
        "0.1",
        "0.3",
        "0.30000000000000004",
        "100000000000000000000",
        "true",
        "false",
        "null",
        "x",
        "-5",
        "-5.5",
        "0.0000001",
        "1e-7",
        "2.5",
        "",
        "4",
        "3",
        "-9223372036854775808",
        "0.000000000000000000000000000001",
    ] {
        queries.push(
            ContentQuery::default()
                .with_filter("v", v)
                .with_page(0, 100),
        );
    }
    for t in ["x", "2.5", "true", "false", "2", "2.0", "y", "null", "1"] {
        queries.push(
            ContentQuery::default()
                .with_filter("t", t)
                .with_page(0, 100),
        );
    }
    for s in [
        "b",
        "B",
        "",
        "é",
        "old",
        "new",
        "newer",
        "x\"y",
        "x\\y",
        "a\u{10000}",
    ] {
        queries.push(
            ContentQuery::default()
                .with_filter("s", s)
                .with_page(0, 100),
        );
    }
    queries.push(
        ContentQuery::default()
            .with_filter("t", "x")
            .with_filter("v", "2")
            .with_page(0, 100),
    );
    queries.push(ContentQuery::default().with_filter("missing", "x"));
    for dir in [SortDirection::Asc, SortDirection::Desc] {
        for attr in ["v", "s", "t", "missing"] {
            queries.push(
                ContentQuery::default()
                    .with_sort(attr, dir)
                    .with_page(0, 100),
            );
        }
        queries.push(
            ContentQuery::default()
                .with_sort("t", dir)
                .with_sort("s", SortDirection::Desc)
                .with_sort("v", dir)
                .with_page(0, 100),
        );
        for page in 0..4 {
            queries.push(
                ContentQuery::default()
                    .with_sort("v", dir)
                    .with_page(page, 7),
            );
        }
    }
    queries.push(ContentQuery::default().with_page(2, 10));
    queries.push(ContentQuery::default().with_page(100, 10));
    if let Err(e) = compare_lists(&*store, &steps, &queries).await {
        panic!("{e}");
    }
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..4).prop_map(Value::from),
        (-6i32..7).prop_map(|n| Value::from(f64::from(n) / 2.0)),
        // Any double below 1e15 (tiny and subnormal ones too). Larger ones
        // are whole numbers, which PostgreSQL's numeric gives back as
        // integers: the same JSON number, another serde_json variant.
        any::<f64>()
            .prop_filter("a float below 1e15", |x| x.is_finite() && x.abs() < 1e15)
            .prop_map(Value::from),
        prop::sample::select(vec!["", "a", "B", "b", "é", "2", "1.5", "true", "x", "ab"])
            .prop_map(Value::from),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => leaf(),
        2 => prop::collection::vec(leaf(), 0..4).prop_map(Value::Array),
        1 => leaf().prop_map(|x| json!({"k": x})),
    ]
}

fn data() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(prop::sample::select(vec!["a", "b", "c"]), value(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (data(), 0..3i64, prop::option::of((data(), 0..2i64))),
        0..12,
    )
    .prop_map(|records| {
        let mut steps = Vec::new();
        let mut replaces = Vec::new();
        for (i, (data, second, replace)) in records.into_iter().enumerate() {
            let id = format!("{}{i}", ["A", "a", "_", "Z", "é"][i % 5]);
            if let Some((data, later)) = replace {
                replaces.push(Step {
                    replace: true,
                    ..create(&id, 3 + later, data)
                });
            }
            steps.push(create(&id, second, data));
        }
        steps.extend(replaces);
        steps
    })
}

fn query() -> impl Strategy<Value = ContentQuery> {
    let attr = || prop::sample::select(vec!["a", "b", "c", "d"]);
    let text = prop::sample::select(vec![
        "", "a", "B", "b", "2", "2.0", "-1", "0", "1.5", "-1.50", "true", "false", "x", "é", "null",
    ]);
    let dir = prop_oneof![Just(SortDirection::Asc), Just(SortDirection::Desc)];
    (
        prop::collection::vec((attr(), text), 0..3),
        prop::collection::vec((attr(), dir), 0..3),
        0..3u32,
        1..6u32,
    )
        .prop_map(|(filters, sort, page, size)| {
            let mut q = ContentQuery::default().with_page(page, size);
            for (a, v) in filters {
                q = q.with_filter(a, v);
            }
            for (a, d) in sort {
                q = q.with_sort(a, d);
            }
            q
        })
}

/// Random records (some replaced) and random queries: the store's pages
/// equal the memory store's.
pub fn list_matches_memory_proptest<S: ConsentStore + 'static>(
    rt: &tokio::runtime::Runtime,
    store: &Arc<S>,
) {
    let mut runner = TestRunner::new(Config {
        cases: 40,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (steps(), prop::collection::vec(query(), 1..8));
    let result = runner.run(&strategy, |(steps, queries)| {
        rt.block_on(compare_lists(&**store, &steps, &queries))
            .map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
