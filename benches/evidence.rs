//! Consent evidence on each store: a page of a long history, and what the
//! ledger and the signed receipt add to an acceptance.
//!
//! ```sh
//! ACCORD_TEST_PG_URL=postgres://postgres@127.0.0.1:5432/test \
//!     cargo bench --bench evidence --features sqlite,postgres,http,testkit
//! ```
//!
//! - `history/<store>/first` and `…/late`: one subject with 10,000 events
//!   (5,000 acceptances, each `ACCEPTED` then `EXPIRED`), a page of the
//!   default size (20) at the start and at page 490 (events 9,800 to 9,819).
//!   On PostgreSQL also `first/analyzed` and `late/analyzed`: the same
//!   pages after `ANALYZE` of the history table, the statistics autovacuum
//!   keeps in a running database (before it, the planner may still see
//!   the table as it was when it was small).
//! - `accept/<store>/…`: `accept` is `ConsentService::accept_consent` (a
//!   new subject each time): validation, reads, the acceptance's write with
//!   its ledger entry, history rows and outbox event, in one transaction.
//!   `accept+receipt` is the same acceptance through
//!   `accept_consent_with_entry`, whose write hands back its ledger entry
//!   (position, hash, subject), then the receipt built and signed
//!   (Ed25519): nothing is read back. `receipt/by-id` is a receipt of an
//!   existing acceptance as `GET …/receipts/{id}` builds it
//!   (`receipt_source`: its ledger entries, its latest version), signed;
//!   `receipt/sign` the signature alone (the receipt serialized, encoded
//!   and signed), of a receipt already built.
//!   `write/acceptance` is the store's write of one acceptance record
//!   (ledger entry, history rows and outbox event included); `write/plain`
//!   the same record written as a content type that has none of them (the
//!   same `insert_content` path, same `data`).
//! - With feature `testkit`, the baselines without the ledger:
//!   `accept/no-ledger` is `accept` and `write/no-ledger` is
//!   `write/acceptance` with the stores' ledger entries turned off
//!   (`accord::store::set_ledger_for_bench`): the same acceptance, history
//!   rows and outbox event included, without its ledger entry. The cost
//!   of the ledger and the signature is `accept+receipt` against
//!   `accept/no-ledger`.
//!
//! The memory store is the reference; SQLite runs on a file (WAL,
//! `synchronous = FULL`); PostgreSQL in a schema of its own, dropped
//! afterwards (skipped without `ACCORD_TEST_PG_URL`).
#![allow(clippy::unwrap_used)] // a benchmark that cannot set up should stop
#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

mod pg_schema;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use accord::consent::evidence::HistoryQuery;
use accord::consent::receipt::{for_acceptance, ConsentReceipt, Controller, EntryRef};
use accord::consent::{
    AcceptConsentRequest, ConsentService, ContentType, ContentWrite, ReceiptSource,
};
use accord::http::receipt::ReceiptSigner;
use accord::store::memory::MemoryStore;
use accord::store::sqlite::SqliteStore;
use accord::store::ConsentStore;
use accord::ManualClock;
use chrono::{TimeZone, Utc};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use tokio::runtime::Runtime;

/// Acceptances of the long history (two events each).
const ACCEPTANCES: u64 = 5_000;

fn request(subject: &str, consent_id: &str) -> AcceptConsentRequest {
    AcceptConsentRequest {
        app: Some("shop".into()),
        data_subject: Some(subject.into()),
        consent_id: Some(consent_id.into()),
        purposes: None,
        user_agent: Some("Mozilla/5.0".into()),
        country: Some("TH".into()),
        local_ip: Some("192.168.1.10".into()),
        os_version: Some("iOS 17".into()),
        model: Some("iPhone".into()),
        device_fingerprint_id: Some("fp-1".into()),
        note: Some("signup".into()),
        ..AcceptConsentRequest::default()
    }
}

/// A published consent of `shop` with a lifespan of one day.
async fn consent<S: ConsentStore + 'static>(svc: &ConsentService<S>, project: &str) -> String {
    let notice = svc
        .create_content(
            project,
            "svc-privacy-notice-v1",
            json!({"name": "Privacy", "descriptionEn": "How we use data", "revision": 1, "status": "PUBLISHED"}),
            "admin",
        )
        .await
        .unwrap();
    svc.create_content(
        project,
        "svc-consent-v1",
        json!({"name": "Shop", "descriptionEn": "Please agree", "application": "shop",
               "purposes": ["email", "sms"], "lifespan": 1, "privacyNoticeRef": notice.id,
               "revision": 1, "status": "PUBLISHED"}),
        "admin",
    )
    .await
    .unwrap()
    .id
}

/// `analyze`: brings the store's statistics up to date, where it has any.
fn bench_store<S: ConsentStore + 'static>(
    c: &mut Criterion,
    rt: &Runtime,
    name: &str,
    store: S,
    analyze: Option<&dyn Fn()>,
) {
    let store = Arc::new(store);
    let start = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let clock = Arc::new(ManualClock::new(start));
    let svc = ConsentService::new(store.clone(), clock.clone());
    bench_history(c, rt, name, &svc, &clock, analyze);
    bench_accept(c, rt, name, &svc, &store, &clock);
}

fn bench_history<S: ConsentStore + 'static>(
    c: &mut Criterion,
    rt: &Runtime,
    name: &str,
    svc: &ConsentService<S>,
    clock: &ManualClock,
    analyze: Option<&dyn Fn()>,
) {
    // The long history: one acceptance a minute, then every expiry passed.
    let project = "history";
    let consent_id = rt.block_on(consent(svc, project));
    rt.block_on(async {
        for _ in 0..ACCEPTANCES {
            clock.advance(chrono::Duration::minutes(1));
            svc.accept_consent(project, request("long", &consent_id), "app")
                .await
                .unwrap();
        }
    });
    clock.advance(chrono::Duration::days(2));
    let mut group = c.benchmark_group(format!("history/{name}"));
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(3));
    // As the table was written; then, where the store keeps statistics,
    // after they are brought up to date.
    let mut pages = |suffix: &str| {
        for (page_label, page) in [("first", 0), ("late", 490)] {
            let q = HistoryQuery {
                page,
                ..HistoryQuery::default()
            };
            let got = rt
                .block_on(svc.subject_history(project, "long", &q))
                .unwrap();
            assert_eq!(got.total, 2 * ACCEPTANCES);
            assert_eq!(got.items.len(), 20);
            group.bench_function(format!("{page_label}{suffix}"), |b| {
                b.iter(|| {
                    rt.block_on(svc.subject_history(project, "long", &q))
                        .unwrap()
                });
            });
        }
    };
    pages("");
    if let Some(analyze) = analyze {
        analyze();
        pages("/analyzed");
    }
    group.finish();
}

/// The receipt of stored acceptance `id`, built as `GET …/receipts/{id}`
/// builds it (its ledger entries, its latest version), not signed.
async fn stored_receipt<S: ConsentStore + 'static>(
    svc: &ConsentService<S>,
    project: &str,
    id: &str,
    controller: &Controller,
) -> ConsentReceipt {
    let ReceiptSource::Acceptance(record, entry) =
        svc.receipt_source(project, id, None).await.unwrap()
    else {
        panic!("an acceptance")
    };
    for_acceptance(
        &record,
        &EntryRef::parse(&entry.unwrap()).unwrap(),
        controller,
    )
}

fn bench_accept<S: ConsentStore + 'static>(
    c: &mut Criterion,
    rt: &Runtime,
    name: &str,
    svc: &ConsentService<S>,
    store: &S,
    clock: &ManualClock,
) {
    // Acceptances, each of a new subject.
    let project = "accept";
    let consent_id = rt.block_on(consent(svc, project));
    let signer = ReceiptSigner::from_seed(&[7u8; 32]).unwrap();
    let controller = Controller::default();
    let n = AtomicU64::new(0);
    let next = || format!("s{}", n.fetch_add(1, Ordering::Relaxed));
    let mut group = c.benchmark_group(format!("accept/{name}"));
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(4));
    group.bench_function("accept", |b| {
        b.iter(|| {
            rt.block_on(svc.accept_consent(project, request(&next(), &consent_id), "app"))
                .unwrap()
        });
    });
    group.bench_function("accept+receipt", |b| {
        b.iter(|| {
            rt.block_on(async {
                let (record, entry) = svc
                    .accept_consent_with_entry(project, request(&next(), &consent_id), "app")
                    .await
                    .unwrap();
                signer.sign(&for_acceptance(&record, &entry.unwrap(), &controller))
            })
        });
    });
    #[cfg(feature = "testkit")]
    {
        accord::store::set_ledger_for_bench(false);
        group.bench_function("accept/no-ledger", |b| {
            b.iter(|| {
                rt.block_on(svc.accept_consent(project, request(&next(), &consent_id), "app"))
                    .unwrap()
            });
        });
        accord::store::set_ledger_for_bench(true);
    }
    let sample = rt
        .block_on(svc.accept_consent(project, request("sample", &consent_id), "app"))
        .unwrap();
    group.bench_function("receipt/by-id", |b| {
        b.iter(|| {
            rt.block_on(async {
                signer.sign(&stored_receipt(svc, project, &sample.id, &controller).await)
            })
        });
    });
    // The signature alone, of a receipt already built.
    let built = rt.block_on(stored_receipt(svc, project, &sample.id, &controller));
    group.bench_function("receipt/sign", |b| b.iter(|| signer.sign(&built)));
    let data = rt
        .block_on(svc.acceptance_with_entry(project, &sample.id, None))
        .unwrap()
        .0
        .data;
    let mut writes = vec![
        ("write/acceptance", ContentType::ConsentAcceptance, true),
        ("write/plain", ContentType::Purpose, true),
    ];
    if cfg!(feature = "testkit") {
        writes.push(("write/no-ledger", ContentType::ConsentAcceptance, false));
    }
    for (label, content_type, ledger) in writes {
        #[cfg(feature = "testkit")]
        accord::store::set_ledger_for_bench(ledger);
        #[cfg(not(feature = "testkit"))]
        let _ = ledger;
        group.bench_function(label, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let mut data = data.clone();
                    let id = next();
                    data.insert("dataSubject".into(), json!(id));
                    let write = ContentWrite {
                        project_id: project.into(),
                        content_type,
                        id,
                        data,
                        actor: "app".into(),
                        at: accord::Clock::now(clock),
                    };
                    store.insert_content(&write).await.unwrap()
                })
            });
        });
    }
    #[cfg(feature = "testkit")]
    accord::store::set_ledger_for_bench(true);
    group.finish();
}

fn evidence(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    bench_store(c, &rt, "memory", MemoryStore::new(), None);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    let sqlite = rt
        .block_on(SqliteStore::open(path.to_str().unwrap()))
        .unwrap();
    bench_store(c, &rt, "sqlite", sqlite, None);

    let Some(pg) = pg_schema::BenchSchema::open(&rt, "evidence") else {
        return;
    };
    let analyze = || {
        let sql = format!("ANALYZE \"{}\".consent_history", pg.schema);
        rt.block_on(sqlx::query(&sql).execute(&pg.admin)).unwrap();
    };
    bench_store(c, &rt, "postgres", pg.store.clone(), Some(&analyze));
    pg.drop_schema(&rt);
}

criterion_group!(benches, evidence);
criterion_main!(benches);
