//! The store contract itself, through the store traits: lists equal to the
//! memory store's for the same records and queries (a table of edge cases
//! and a proptest), the compare-and-append race, one `seq` order under
//! concurrent appends, the contract's errors, and the durability helpers
//! the SQL runners call around a reopen.

use std::sync::Arc;

use accord::consent::{
    AcceptanceStatus, ContentQuery, ContentRecord, ContentType, ContentWrite, PurposeEvent,
};
use accord::store::memory::MemoryStore;
use accord::store::{ConsentLedger, ConsentStore, ContentStore, Page, SortDirection};
use accord::ErrorKind;
use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};
use tokio::sync::Barrier;
use uuid::Uuid;

use super::{t0, Fx};

const T: ContentType = ContentType::PrivacyNotice;

fn project() -> String {
    format!("p-{}", Uuid::new_v4())
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn write(project: &str, id: &str, data: Value, at: DateTime<Utc>) -> ContentWrite {
    ContentWrite {
        project_id: project.to_owned(),
        content_type: T,
        id: id.to_owned(),
        data: object(data),
        actor: "tester".into(),
        at,
    }
}

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

/// Two replaces from the same version at the same moment, several times:
/// exactly one appends, the other is `stale_version`, nothing is lost.
pub async fn concurrent_replaces_of_one_version_one_wins<S: ConsentStore + 'static>(store: Arc<S>) {
    let p = project();
    for round in 0..10 {
        let id = format!("race-{round}");
        store
            .insert_content(&write(&p, &id, json!({"n": 0}), t0()))
            .await
            .unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let mut tasks = Vec::new();
        for n in 1..=2 {
            let (store, barrier) = (Arc::clone(&store), Arc::clone(&barrier));
            let w = write(&p, &id, json!({"n": n}), t0() + Duration::seconds(n));
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                store.replace_content(&w, 1).await
            }));
        }
        let mut winners = Vec::new();
        for task in tasks {
            match task.await.unwrap() {
                Ok(r) => winners.push(r),
                Err(e) => assert_eq!(
                    (e.kind(), e.code()),
                    (ErrorKind::Conflict, "stale_version"),
                    "{e}"
                ),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: exactly one wins");
        let versions = store.content_versions(&p, T, &id).await.unwrap();
        assert_eq!(
            versions.iter().map(|v| v.version).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(versions[1], winners[0]);
        assert_eq!(
            store.content(&p, T, &id).await.unwrap().as_ref(),
            Some(&winners[0])
        );
    }
}

/// Many acceptances of one subject at once — consent acceptances (content
/// appends) and purpose acceptances (event appends) — are all recorded,
/// each with its own `seq`, all after what came before and before what
/// comes after.
pub async fn concurrent_acceptances_of_one_subject<S: ConsentStore + 'static>(store: Arc<S>) {
    const EACH: usize = 16;
    let fx = Fx::new(Arc::clone(&store));
    let c = fx.consent("shop", &["email", "sms"], None).await;
    let mut tasks = Vec::new();
    for i in 0..2 * EACH {
        let (svc, project, id) = (fx.svc.clone(), fx.project.clone(), c.id.clone());
        tasks.push(tokio::spawn(async move {
            if i % 2 == 0 {
                let req = Fx::<S>::request("shop", "u", &id, None);
                svc.accept_consent(&project, req, "a").await.map(|a| a.id)
            } else {
                let req = Fx::<S>::purpose("shop", "u", "sms");
                svc.accept_purpose(&project, req).await.map(|a| a.id)
            }
        }));
    }
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.unwrap().expect("every acceptance is recorded"));
    }
    let acceptances = store.acceptance_versions(&fx.project, "u").await.unwrap();
    let events = store.purpose_events(&fx.project, "u", None).await.unwrap();
    assert_eq!((acceptances.len(), events.len()), (EACH, EACH));
    let mut recorded: Vec<String> = acceptances.iter().map(|r| r.id.clone()).collect();
    recorded.extend(events.iter().map(|e| e.id.clone()));
    recorded.sort();
    ids.sort();
    assert_eq!(recorded, ids, "every acknowledged acceptance is there");

    let increasing = |seqs: &[i64]| seqs.windows(2).all(|w| w[0] < w[1]);
    let a_seqs: Vec<i64> = acceptances.iter().map(|r| r.seq).collect();
    let e_seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
    assert!(
        increasing(&a_seqs) && increasing(&e_seqs),
        "in seq order, no repeats"
    );
    let mut all: Vec<i64> = a_seqs.iter().chain(&e_seqs).copied().collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 2 * EACH, "content and events share one order");
    assert!(all[0] > c.seq, "after the consent they accept");
    let after = store
        .append_purpose_event(&event(&fx.project, "after"))
        .await
        .unwrap();
    assert!(after.seq > all[2 * EACH - 1], "before what comes next");
    let history = fx.svc.history(&fx.project, "u").await.unwrap();
    assert_eq!(history.len(), 2 * EACH + 1);
}

fn event(project: &str, id: &str) -> PurposeEvent {
    PurposeEvent {
        id: id.to_owned(),
        project_id: project.to_owned(),
        data_subject: "u".into(),
        app: "shop".into(),
        purpose_code: "email".into(),
        status: AcceptanceStatus::Withdrawn,
        consent_id: None,
        acceptance_date: None,
        expired_date: None,
        withdrawal_date: Some(t0()),
        recorded_at: t0(),
        seq: -1,
    }
}

/// The contract's errors, store by store.
pub async fn store_errors<S: ConsentStore + 'static>(store: Arc<S>) {
    let p = project();
    let w = write(&p, "x", json!({"n": 1}), t0());
    let v1 = store.insert_content(&w).await.unwrap();
    assert_eq!((v1.version, v1.created_by.as_str()), (1, "tester"));
    let code = |e: accord::Error| (e.kind(), e.code().to_owned());
    assert_eq!(
        code(store.insert_content(&w).await.unwrap_err()),
        (ErrorKind::Conflict, "duplicate_content_id".into())
    );
    for expected in [0, 2, 7] {
        assert_eq!(
            code(store.replace_content(&w, expected).await.unwrap_err()),
            (ErrorKind::Conflict, "stale_version".into()),
            "expected version {expected}"
        );
    }
    let missing = write(&p, "missing", json!({}), t0());
    assert_eq!(
        code(store.replace_content(&missing, 1).await.unwrap_err()),
        (ErrorKind::NotFound, "content_not_found".into())
    );
    let other_type = ContentWrite {
        content_type: ContentType::Consent,
        ..w.clone()
    };
    assert_eq!(
        code(store.replace_content(&other_type, 1).await.unwrap_err()),
        (ErrorKind::NotFound, "content_not_found".into()),
        "ids are per type"
    );
    assert!(store
        .content(&p, ContentType::Consent, "x")
        .await
        .unwrap()
        .is_none());
    assert!(store
        .content_versions(&p, T, "missing")
        .await
        .unwrap()
        .is_empty());

    let e = store.append_purpose_event(&event(&p, "e1")).await.unwrap();
    assert!(e.seq > v1.seq, "the passed seq is ignored");
    assert_eq!(
        code(
            store
                .append_purpose_event(&event(&p, "e1"))
                .await
                .unwrap_err()
        ),
        (ErrorKind::Conflict, "duplicate_event_id".into())
    );
    // The same ids in another project are other records.
    let q = project();
    store.append_purpose_event(&event(&q, "e1")).await.unwrap();
    store
        .insert_content(&write(&q, "x", json!({"n": 2}), t0()))
        .await
        .unwrap();
    assert_eq!(store.content(&p, T, "x").await.unwrap(), Some(v1));
    assert_eq!(
        store.purpose_events(&p, "u", Some("shop")).await.unwrap(),
        [e]
    );
    assert!(store
        .purpose_events(&p, "u", Some("other"))
        .await
        .unwrap()
        .is_empty());
    assert!(store.purpose_names(&p, &[]).await.unwrap().is_empty());
}

/// What [`durability_write`] acknowledged.
#[derive(Debug)]
pub struct Written {
    project: String,
    versions: Vec<ContentRecord>,
    events: Vec<PurposeEvent>,
}

/// Writes content (two versions of one record, one of another), and purpose
/// events; returns what the store acknowledged.
pub async fn durability_write<S: ConsentStore>(store: &S) -> Written {
    let p = project();
    let mut versions = vec![store
        .insert_content(&write(&p, "kept", json!({"name": "v1", "n": 1.5}), t0()))
        .await
        .unwrap()];
    let w2 = write(
        &p,
        "kept",
        json!({"name": "v2", "tags": ["a"]}),
        t0() + Duration::hours(1),
    );
    versions.push(store.replace_content(&w2, 1).await.unwrap());
    versions.push(
        store
            .insert_content(&write(&p, "other", json!({"name": "o"}), t0()))
            .await
            .unwrap(),
    );
    let mut events = Vec::new();
    for id in ["e1", "e2"] {
        events.push(store.append_purpose_event(&event(&p, id)).await.unwrap());
    }
    Written {
        project: p,
        versions,
        events,
    }
}

/// Checks, on a reopened store, that everything [`durability_write`]
/// acknowledged is there, and that the `seq` order goes on after it.
pub async fn durability_check<S: ConsentStore>(store: &S, w: &Written) {
    let p = &w.project;
    assert_eq!(
        store.content_versions(p, T, "kept").await.unwrap(),
        w.versions[..2]
    );
    assert_eq!(
        store.content(p, T, "other").await.unwrap().as_ref(),
        Some(&w.versions[2])
    );
    let listed = store
        .list_content(p, T, &ContentQuery::default())
        .await
        .unwrap();
    assert_eq!(listed.items, [w.versions[1].clone(), w.versions[2].clone()]);
    assert_eq!(store.purpose_events(p, "u", None).await.unwrap(), w.events);
    let last = w.events.iter().map(|e| e.seq).max().unwrap();
    let next = store.append_purpose_event(&event(p, "e3")).await.unwrap();
    assert!(next.seq > last, "the counter survived too");
}
