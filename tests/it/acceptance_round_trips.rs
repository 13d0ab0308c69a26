//! What one consent acceptance sends to a SQL database, and what its
//! receipt reads: a known number of statements, counted with
//! `accord::store::sql_sent` (feature `testkit`), which counts per thread:
//! each test runs on a current-thread runtime. The write hands back its
//! ledger entry (position, hash, subject), the entry a receipt read back
//! finds. See `docs/benchmarks.md`, "Consent evidence".
#![cfg(all(feature = "testkit", feature = "sqlite"))]
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use accord::consent::receipt::EntryRef;
use accord::consent::{ConsentService, ReceiptSource};
use accord::store::sql_sent;
use accord::store::ConsentStore;
use accord::SystemClock;
use serde_json::json;

use crate::suite::consent::Fx;

/// Statements sent while `f` runs.
async fn counted<T>(f: impl std::future::Future<Output = T>) -> (T, u64) {
    let (_, before) = sql_sent();
    let out = f.await;
    let (_, after) = sql_sent();
    (out, after - before)
}

/// Checks `store`: `accept` statements for an acceptance (its reads and
/// its write transaction), `receipt` for the reads of a receipt by id.
async fn check<S: ConsentStore + 'static>(store: Arc<S>, what: &str, accept: u64, receipt: u64) {
    let svc = ConsentService::new(store, Arc::new(SystemClock));
    let project = uuid::Uuid::new_v4().to_string();
    let notice = svc
        .create_content(
            &project,
            "svc-privacy-notice-v1",
            json!({"name": "Privacy", "descriptionEn": "How we use data", "revision": 1, "status": "PUBLISHED"}),
            "admin",
        )
        .await
        .unwrap();
    let consent = svc
        .create_content(
            &project,
            "svc-consent-v1",
            json!({"name": "Shop", "descriptionEn": "Please agree", "application": "shop",
                   "purposes": ["email", "sms"], "lifespan": 1, "privacyNoticeRef": notice.id,
                   "revision": 1, "status": "PUBLISHED"}),
            "admin",
        )
        .await
        .unwrap();
    // The first acceptance creates the project's ledger head; the second
    // is the one counted.
    svc.accept_consent(
        &project,
        Fx::<S>::request("shop", "u0", &consent.id, None),
        "app",
    )
    .await
    .unwrap();
    let (accepted, sent) = counted(svc.accept_consent_with_entry(
        &project,
        Fx::<S>::request("shop", "u1", &consent.id, None),
        "app",
    ))
    .await;
    let (record, entry) = accepted.unwrap();
    let entry = entry.unwrap();
    eprintln!("{what}: an acceptance sent {sent} statements");
    assert_eq!(entry.position, 2, "{what}");
    let (source, read) = counted(svc.receipt_source(&project, &record.id, None)).await;
    eprintln!("{what}: a receipt's reads sent {read} statements");
    let ReceiptSource::Acceptance(read_back, text) = source.unwrap() else {
        panic!("{what}: not an acceptance")
    };
    assert_eq!(read_back, record, "{what}");
    assert_eq!(EntryRef::parse(&text.unwrap()), Some(entry), "{what}");
    assert_eq!(sent, accept, "{what}, statements of an acceptance");
    assert_eq!(read, receipt, "{what}, statements of a receipt's reads");
}

#[tokio::test]
async fn an_acceptance_and_its_receipt_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::common::sqlite_in(&dir).await;
    // The consent and its notice; BEGIN, the next seq, the version, the
    // ledger (the head upserted and read, the entry, the head advanced),
    // the history (the acceptance's versions, the consent's and the
    // notice's, the old rows deleted, two rows: ACCEPTED and EXPIRED), the
    // outbox event and its deliveries, COMMIT. The receipt: the record's
    // ledger entries, its latest version.
    check(Arc::new(store), "SQLite", 17, 2).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn an_acceptance_and_its_receipt_on_postgres() {
    let Some((store, _schema)) =
        crate::pg_support::store_in_schema("the acceptance round-trip test", "accept_trips").await
    else {
        return;
    };
    // As on SQLite, but the ledger's entry and the head's advance are one
    // statement (a `WITH` that inserts).
    check(Arc::new(store), "PostgreSQL", 16, 2).await;
}
