//! The store contract itself, through the store traits: the
//! compare-and-append race, one `seq` order under concurrent appends, the
//! contract's errors, and the durability helpers the SQL runners call
//! around a reopen. (Lists are compared with the memory store's in
//! [`super::lists`].)

use std::sync::Arc;

use accord::consent::{
    AcceptanceStatus, ContentQuery, ContentRecord, ContentType, ContentWrite, PurposeEvent,
};
use accord::store::{ConsentLedger, ConsentStore, ContentStore};
use accord::ErrorKind;
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Map, Value};
use tokio::sync::Barrier;
use uuid::Uuid;

use super::{t0, Fx};

pub(super) const T: ContentType = ContentType::PrivacyNotice;

pub(super) fn project() -> String {
    format!("p-{}", Uuid::new_v4())
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

pub(super) fn write(project: &str, id: &str, data: Value, at: DateTime<Utc>) -> ContentWrite {
    ContentWrite {
        project_id: project.to_owned(),
        content_type: T,
        id: id.to_owned(),
        data: object(data),
        actor: "tester".into(),
        at,
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
