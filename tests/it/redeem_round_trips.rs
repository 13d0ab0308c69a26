//! What one redeem sends to a SQL database: one write transaction when the
//! service's snapshot holds the campaign (the transaction checks the stored
//! version), and a known number of statements. Counted with `accord::store::sql_sent` (feature `testkit`),
//! which counts per thread: each test runs on a current-thread runtime.
//!
//! A *call* is one use of the database by a store method (a pooled
//! connection outside a transaction, or one transaction); a *statement* is
//! every statement sent, `BEGIN` and `COMMIT` included. See
//! `docs/benchmarks.md` for the figures and how they were measured.
//!
//! `ACCORD_REDEEM_ROUNDS=n` runs n redeems after the checks (default 0):
//! the load measured under callgrind for `docs/benchmarks.md`.
#![cfg(all(feature = "testkit", feature = "sqlite"))]
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use accord::campaign::{CampaignInput, RedeemRequest, SearchOptions, SearchRequest};
use accord::outbox::webhook::Endpoint;
use accord::outbox::EventType;
use accord::store::sql_sent;
use accord::store::{CampaignStore, OutboxStore, RedemptionStore};
use accord::{CampaignService, SystemClock};
use serde_json::json;

fn campaign() -> CampaignInput {
    serde_json::from_value(json!({
        "name": "trips", "refCode": "TRIPS",
        "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
        "quotas": [{"key": "${campaignCode}-${userId}", "value": 1_000_000}],
        "rules": [{"name": "r", "when": [], "thenOperator": "AND",
                   "then": [{"action": "DISCOUNT", "data": []}]}]
    }))
    .unwrap()
}

fn request(user: u64, key: Option<String>) -> RedeemRequest {
    let mut r: RedeemRequest = serde_json::from_value(json!({
        "campaignCode": "TRIPS",
        "attribute": {"userId": format!("u{user}"), "tier": "gold"},
        "cart": {"totalPrice": "1500.00", "currency": "THB",
                 "items": [{"sku": "A1", "amount": 2, "price": "750.00"}]}
    }))
    .unwrap();
    r.idempotency_key = key;
    r
}

/// `(calls, statements)` of one redeem.
async fn one<S: CampaignStore + RedemptionStore>(
    service: &CampaignService<S>,
    project: &str,
    request: &RedeemRequest,
) -> (u64, u64) {
    let (calls, statements) = sql_sent();
    service.redeem(project, request).await.unwrap();
    let (c, s) = sql_sent();
    (c - calls, s - statements)
}

/// Checks `store`; `statements`: what one redeem's transaction sends (one
/// quota key).
async fn check<S: CampaignStore + RedemptionStore>(store: Arc<S>, what: &str, statements: u64) {
    let project = uuid::Uuid::new_v4().to_string();
    // A refresh interval of zero: the snapshot asks the store for the
    // catalog version at every use, one call more.
    let eager = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
        .with_refresh_interval(Duration::ZERO);
    let service = CampaignService::new(store, Arc::new(SystemClock));
    service
        .create_campaign(&project, campaign(), "t")
        .await
        .unwrap();
    // A search builds the project's snapshot, as a checkout's search
    // before its redeem would; the first redeem is not counted either.
    let search: SearchRequest =
        serde_json::from_value(json!({"attribute": {"userId": "u0"}})).unwrap();
    for s in [&service, &eager] {
        s.search(&project, &search, &SearchOptions::default())
            .await
            .unwrap();
    }
    service.redeem(&project, &request(0, None)).await.unwrap();
    eager.redeem(&project, &request(0, None)).await.unwrap();
    let mut counted = Vec::new();
    for (label, service, req) in [
        ("without a key", &service, request(1, None)),
        (
            "with a new key",
            &service,
            request(2, Some(uuid::Uuid::new_v4().to_string())),
        ),
        ("refresh interval zero", &eager, request(3, None)),
    ] {
        let (calls, statements) = one(service, &project, &req).await;
        eprintln!("{what}, {label}: {calls} store calls, {statements} statements");
        counted.push((label, calls, statements));
    }
    let rounds: u64 = std::env::var("ACCORD_REDEEM_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    if rounds > 0 {
        let start = Instant::now();
        for i in 0..rounds {
            let key = uuid::Uuid::new_v4().to_string();
            service
                .redeem(&project, &request(i % 100, Some(key)))
                .await
                .unwrap();
        }
        let each = start.elapsed() / u32::try_from(rounds).unwrap();
        eprintln!("{what}: {rounds} redeems, {each:?} each");
    }
    for (label, calls, sent) in counted {
        let (expect_calls, expect_sent) = if label == "refresh interval zero" {
            (2, statements + 1)
        } else {
            (1, statements)
        };
        assert_eq!(
            calls, expect_calls,
            "{what}, store calls of a redeem {label}"
        );
        assert_eq!(sent, expect_sent, "{what}, statements of a redeem {label}");
    }
}

#[tokio::test]
async fn a_redeem_makes_one_store_call_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::common::sqlite_in(&dir).await;
    // BEGIN, the campaign's version (and whether it has a code pool), the
    // redemption, its usage read and written, the charges, the outbox event
    // and its deliveries, COMMIT.
    check(Arc::new(store), "SQLite", 9).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_redeem_makes_one_store_call_on_postgres() {
    let Some((store, _schema)) =
        crate::pg_support::store_in_schema("the redeem round-trip test", "trips").await
    else {
        return;
    };
    // BEGIN, the campaign's version (and whether it has a code pool), the
    // redemption, the guarded charge, the charges, the outbox event and its
    // deliveries, COMMIT.
    check(Arc::new(store), "PostgreSQL", 8).await;
}

/// A plan of one redemption of `campaign` by `user`, charging 1 to the
/// user's key within `limit`, with idempotency key `key`.
fn plan(
    campaign: &accord::campaign::Campaign,
    user: &str,
    limit: u32,
    key: &str,
) -> accord::store::RedemptionPlan {
    use accord::campaign::{QuotaCharge, Redemption, TxStatus};
    accord::store::RedemptionPlan {
        redemption: Redemption {
            id: uuid::Uuid::new_v4(),
            project_id: campaign.project_id.clone(),
            campaign_id: campaign.id,
            campaign_code: campaign.ref_code.clone(),
            campaign_version: campaign.version,
            status: TxStatus::Complete,
            user_id: Some(user.to_owned()),
            channel: None,
            idempotency_key: Some(key.to_owned()),
            request_fingerprint: None,
            action_txs: Vec::new(),
            quotas: vec![QuotaCharge {
                key: format!("TRIPS-{user}"),
                amount: 1.into(),
                limit: limit.into(),
                window: None,
            }],
            code: None,
            created_date: accord::clock::truncate_micros(chrono::Utc::now()),
            cancelled_date: None,
        },
        verify_campaign: false,
    }
}

/// The outcomes of `plans` redeemed at the same moment, and the (calls,
/// statements) they sent. On a current-thread runtime, every redeem
/// spawned before the first is polled is queued when the group's leader
/// starts, so they are one group.
async fn one_group<S: RedemptionStore + 'static>(
    store: &Arc<S>,
    plans: &[accord::store::RedemptionPlan],
) -> (Vec<accord::store::RedeemOutcome>, u64, u64) {
    let (calls, statements) = sql_sent();
    let tasks: Vec<_> = plans
        .iter()
        .cloned()
        .map(|p| {
            let store = Arc::clone(store);
            tokio::spawn(async move { store.redeem(&p).await.unwrap() })
        })
        .collect();
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await.unwrap());
    }
    let (c2, s2) = sql_sent();
    (outcomes, c2 - calls, s2 - statements)
}

/// A group of eight: six recorded, one refused by its quota (its key used
/// up by a redeem before the group), and one with a used idempotency key:
/// with `replay_in_group`, the key of the group's first member (the group
/// runs member by member, each in a savepoint: the second finds the
/// first's record inside the same transaction), else the key of the redeem
/// before the group (the group runs as one batch). Returns (calls,
/// statements) of the group, after checking each member's outcome and the
/// usage written.
async fn group_of_eight<S: CampaignStore + RedemptionStore + OutboxStore + 'static>(
    store: Arc<S>,
    replay_in_group: bool,
) -> (u64, u64) {
    use accord::store::RedeemOutcome;

    let project = uuid::Uuid::new_v4().to_string();
    let service = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock));
    let c = service
        .create_campaign(&project, campaign(), "t")
        .await
        .unwrap();
    // The refused one's key is used up first.
    let full = plan(&c, "full", 1, "k-full-0");
    assert!(matches!(
        store.redeem(&full).await.unwrap(),
        RedeemOutcome::Recorded(_)
    ));
    let mut plans: Vec<_> = (0..6)
        .map(|i| plan(&c, &format!("g{i}"), 10, &format!("k-{i}")))
        .collect();
    plans.push(plan(&c, "full", 1, "k-full-1"));
    let used_key = if replay_in_group { "k-0" } else { "k-full-0" };
    plans.push(plan(&c, "other", 10, used_key));
    // Three endpoints: every event type, consent events only, disabled.
    let endpoints = [
        endpoint(&project, &[], true),
        endpoint(&project, &[EventType::ConsentAccepted], true),
        endpoint(&project, &[], false),
    ];
    for e in &endpoints {
        assert!(store.insert_endpoint(e, 10).await.unwrap());
    }
    let (outcomes, calls, statements) = one_group(&store, &plans).await;
    for (i, outcome) in outcomes.iter().enumerate().take(6) {
        assert_eq!(
            outcome,
            &RedeemOutcome::Recorded(plans[i].redemption.clone()),
            "member {i}"
        );
    }
    assert!(
        matches!(&outcomes[6], RedeemOutcome::QuotaExceeded { key, used, limit }
            if key == "TRIPS-full" && *used == 1.into() && *limit == 1.into()),
        "{:?}",
        outcomes[6]
    );
    let replayed = if replay_in_group { &plans[0] } else { &full };
    match &outcomes[7] {
        RedeemOutcome::Replayed(r) => assert_eq!(r, &replayed.redemption),
        other => panic!("not a replay: {other:?}"),
    }
    let usage = store
        .quota_usage(
            &project,
            &[
                "TRIPS-full".to_owned(),
                "TRIPS-other".to_owned(),
                "TRIPS-g0".to_owned(),
                "TRIPS-g5".to_owned(),
            ],
        )
        .await
        .unwrap();
    assert_eq!(usage["TRIPS-full"], 1.into());
    assert_eq!(
        usage.get("TRIPS-other").copied().unwrap_or_default(),
        0.into()
    );
    assert_eq!(usage["TRIPS-g0"], 1.into());
    assert_eq!(usage["TRIPS-g5"], 1.into());
    // Every recorded member is stored with its charge.
    for p in &plans[..6] {
        let stored = store
            .redemption(&project, p.redemption.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored, p.redemption);
    }
    // One event for each recorded redemption; the group's six delivered to
    // the one endpoint that takes them (the endpoints came after the
    // first).
    let events = store.outbox_events(&project, None, 100).await.unwrap();
    let created: Vec<_> = events
        .iter()
        .filter(|e| e.event_type == EventType::RedemptionCreated)
        .map(|e| e.payload["redemptionId"].as_str().unwrap().to_owned())
        .collect();
    let mut expected: Vec<_> = std::iter::once(&full)
        .chain(&plans[..6])
        .map(|p| p.redemption.id.to_string())
        .collect();
    expected.sort();
    let mut sorted = created.clone();
    sorted.sort();
    assert_eq!(sorted, expected);
    let delivered = |e: &Endpoint| {
        let store = Arc::clone(&store);
        let (project, id) = (project.clone(), e.id);
        async move { store.deliveries(&project, id, 0, 100).await.unwrap().total }
    };
    assert_eq!(delivered(&endpoints[0]).await, 6);
    assert_eq!(delivered(&endpoints[1]).await, 0);
    assert_eq!(delivered(&endpoints[2]).await, 0);
    (calls, statements)
}

fn endpoint(project: &str, types: &[EventType], enabled: bool) -> Endpoint {
    let now = accord::clock::truncate_micros(chrono::Utc::now());
    Endpoint {
        id: uuid::Uuid::new_v4(),
        project_id: project.to_owned(),
        url: "http://127.0.0.1:9/hook".into(),
        secret: format!("whsec_{}", "0".repeat(64)),
        event_types: types.to_vec(),
        enabled,
        description: None,
        created_date: now,
        last_modified_date: now,
    }
}

/// A group written as one batch sends the same statements for eight
/// members as for two: BEGIN; the idempotency keys taken; the stored
/// record replayed and its charges; the usage of the keys charged and
/// whether a hold's charge to one of them expired; the redemptions, their
/// charges, the new keys' usage, the outbox events and their deliveries;
/// COMMIT.
const BATCH_STATEMENTS: u64 = 12;

#[tokio::test]
async fn concurrent_redeems_share_one_transaction_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::common::sqlite_in(&dir).await;
    let store = Arc::new(store);
    let (calls, statements) = group_of_eight(Arc::clone(&store), true).await;
    eprintln!("SQLite, a group of eight: {calls} store calls, {statements} statements");
    assert_eq!(calls, 1, "one transaction");
    // BEGIN; per recorded member the savepoint (sent with the release of
    // the one before), the redemption, the usage read and written, the
    // charges, the outbox event and its deliveries (6 × 7); the refused
    // one: savepoint, redemption, usage read, the usage read again for the
    // answer, rollback to its savepoint (5); the replay: savepoint, insert,
    // the stored record and its charges read, rollback to its savepoint
    // (5); COMMIT. A lone redeem sends what it did before groups (above).
    assert_eq!(statements, 1 + 42 + 5 + 5 + 1);
    let (calls, statements) = group_of_eight(store, false).await;
    eprintln!("SQLite, a batch of eight: {calls} store calls, {statements} statements");
    assert_eq!((calls, statements), (1, BATCH_STATEMENTS));
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn concurrent_redeems_share_one_transaction_on_postgres() {
    let Some((store, _schema)) =
        crate::pg_support::store_in_schema("the redeem group test", "group").await
    else {
        return;
    };
    let store = Arc::new(store);
    let (calls, statements) = group_of_eight(Arc::clone(&store), true).await;
    eprintln!("PostgreSQL, a group of eight: {calls} store calls, {statements} statements");
    assert_eq!(calls, 1, "one transaction");
    // As on SQLite, with one guarded upsert per charge instead of a read
    // and a write (the refused one: the upsert that did nothing, then the
    // usage read for the answer), and the group's keys locked first, in
    // order (1).
    assert_eq!(statements, 1 + 1 + 36 + 5 + 5 + 1);
    let (calls, statements) = group_of_eight(store, false).await;
    eprintln!("PostgreSQL, a batch of eight: {calls} store calls, {statements} statements");
    assert_eq!((calls, statements), (1, BATCH_STATEMENTS));
}

/// What a group's member was answered, comparable across stores.
fn answer(outcome: &accord::store::RedeemOutcome) -> String {
    use accord::store::RedeemOutcome;
    match outcome {
        RedeemOutcome::Recorded(r) => format!("recorded {}", r.id),
        RedeemOutcome::Replayed(r) => format!("replayed {}", r.id),
        RedeemOutcome::QuotaExceeded { key, used, limit } => {
            format!("refused {key} {used}/{limit}")
        }
        other @ (RedeemOutcome::CodeRefused(_) | RedeemOutcome::CampaignChanged) => {
            format!("{other:?}")
        }
    }
}

/// Groups answer exactly as the same redeems one at a time: 40 rounds of
/// seeded random groups (up to 12 members over 16 users; each charges 1 or
/// 2 to its user's key, limit 4, and to the campaign-wide key, limit 30;
/// some reuse an earlier round's idempotency key, and one round in four
/// uses one key twice, which runs the group member by member) on the SQL
/// store, and one by one on the memory store. Every answer and the final
/// usage of every key agree.
async fn groups_agree_with_one_at_a_time<S: CampaignStore + RedemptionStore + 'static>(
    store: Arc<S>,
) {
    use accord::campaign::QuotaCharge;
    use accord::store::memory::MemoryStore;

    let project = uuid::Uuid::new_v4().to_string();
    let service = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock));
    let c = service
        .create_campaign(&project, campaign(), "t")
        .await
        .unwrap();
    let memory = MemoryStore::new();
    memory.insert_campaign(&c).await.unwrap();
    // A small linear congruential generator: the same rounds every run.
    let mut seed: u64 = 0x5eed;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from((seed >> 33) % u64::try_from(n).unwrap()).unwrap()
    };
    let mut used_keys: Vec<String> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for round in 0..40 {
        let size = 2 + next(11);
        let mut plans = Vec::with_capacity(size);
        for m in 0..size {
            let user = format!("u{}", next(16));
            let key = if !used_keys.is_empty() && next(5) == 0 {
                used_keys[next(used_keys.len())].clone()
            } else {
                format!("r{round}-m{m}")
            };
            let mut p = plan(&c, &user, 4, &key);
            let amount = 1 + next(2);
            p.redemption.quotas[0].amount = amount.into();
            p.redemption.quotas.push(QuotaCharge {
                key: "TRIPS".into(),
                amount: amount.into(),
                limit: 30.into(),
                window: None,
            });
            p.redemption.quotas.sort_by(|a, b| a.key.cmp(&b.key));
            plans.push(p);
        }
        if round % 4 == 3 {
            let first = plans[0].redemption.idempotency_key.clone();
            plans[size - 1].redemption.idempotency_key = first;
        }
        let (outcomes, _, _) = one_group(&store, &plans).await;
        for (m, (p, outcome)) in plans.iter().zip(&outcomes).enumerate() {
            let alone = memory.redeem(p).await.unwrap();
            assert_eq!(answer(outcome), answer(&alone), "round {round}, member {m}");
            let kind = answer(outcome);
            let words = if kind.starts_with("refused") { 2 } else { 1 };
            seen.insert(kind.split(' ').take(words).collect::<Vec<_>>().join(" "));
            used_keys.extend(p.redemption.idempotency_key.clone());
        }
    }
    // The rounds meet every kind of answer: replays, and refusals by a
    // user's key and by the campaign-wide key.
    assert!(
        seen.contains("recorded") && seen.contains("replayed"),
        "{seen:?}"
    );
    assert!(
        seen.contains("refused TRIPS") && seen.iter().any(|a| a.starts_with("refused TRIPS-u")),
        "{seen:?}"
    );
    let mut keys: Vec<String> = (0..16).map(|u| format!("TRIPS-u{u}")).collect();
    keys.push("TRIPS".into());
    assert_eq!(
        store.quota_usage(&project, &keys).await.unwrap(),
        memory.quota_usage(&project, &keys).await.unwrap()
    );
}

#[tokio::test]
async fn groups_agree_with_one_at_a_time_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::common::sqlite_in(&dir).await;
    groups_agree_with_one_at_a_time(Arc::new(store)).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn groups_agree_with_one_at_a_time_on_postgres() {
    let Some((store, _schema)) =
        crate::pg_support::store_in_schema("the redeem group test", "agree").await
    else {
        return;
    };
    groups_agree_with_one_at_a_time(Arc::new(store)).await;
}
