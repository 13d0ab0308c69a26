//! Crash safety: a server process killed with SIGKILL in the middle of
//! concurrent consent acceptances and redeems loses no acknowledged write,
//! half-writes nothing, and leaves every quota equal to its COMPLETE
//! charges.
//!
//! - SQLite: one server process on a file; killed mid-stream; a new process
//!   on the same file; then the checks.
//! - PostgreSQL: two server processes on one database, traffic over both;
//!   one killed mid-stream; the survivor keeps serving; then the checks.
//!
//! The checks ([`verify`]): every request answered 2xx is stored (through
//! the library's store API and over HTTP on the new/surviving server); no
//! more is stored than was answered plus what was in flight; every quota
//! key's usage is within its limit and equals the sum of the COMPLETE
//! redemptions charged to it; and each redeem that was in flight at the
//! kill, retried with its idempotency key, is replayed (201 with
//! `Idempotent-Replayed: true`) exactly when
//! the store had recorded it.
//!
//! Each runs with 8 clients (few users: per-user quotas are reached) and
//! with 64 (a new user nearly every time: redeems are committed in
//! groups, and the kill lands among groups in flight).
//!
//! Also: two servers started with `--demo` at the same moment on one
//! database load the sample data once.
#![cfg(feature = "cli")]
#![allow(clippy::unwrap_used)]

use crate::load;
use crate::reliability_support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use accord::campaign::TxStatus;
use accord::consent::{ContentQuery, ContentType};
use accord::http::Claims;
use accord::store::postgres::PostgresStore;
use accord::store::sqlite::SqliteStore;
use accord::store::{CampaignQuery, CampaignStore, ContentStore, RedemptionQuery, RedemptionStore};
use load::{Limits, Seeded, Target};
use reliability_support::{fresh_schema, pg_url, ServerProcess};
use rust_decimal::Decimal;
use uuid::Uuid;

/// The child server process of these tests.
#[test]
#[ignore = "server process of the crash tests, started by them"]
fn crash_server_child() {
    reliability_support::serve_child();
}

const CHILD: &str = "crash_safety::crash_server_child";

/// Quotas small enough that each is reached by some users during a run.
const LIMITS: Limits = Limits {
    per_user: 4,
    total: 400,
    points: 900,
};
/// The clients of a run.
#[derive(Clone, Copy)]
struct Clients {
    /// Concurrent workers.
    workers: usize,
    /// Distinct users they redeem as.
    users: u32,
}

/// 16 users × 4 per user: fewer than the redeems of a run, so per-user
/// quotas are reached.
const FEW: Clients = Clients {
    workers: 8,
    users: 16,
};

/// 64 clients, rarely the same user twice: most redeems record, and the
/// server commits them in groups (see `docs/operations.md`), so the kill
/// lands among groups in flight.
const MANY: Clients = Clients {
    workers: 64,
    users: 100_000,
};

/// What the clients saw.
#[derive(Debug, Default)]
struct Ledger {
    /// Ids of acceptances answered 201.
    accepted: Vec<String>,
    /// Acceptances sent without an answer.
    accepts_in_doubt: usize,
    /// (key, redemption id) of redeems answered 201.
    redeemed: Vec<(String, String)>,
    /// (key, user, points) of redeems sent without an answer.
    redeems_in_doubt: Vec<(String, String, u32)>,
    /// Redeems answered 409 (a quota reached).
    exceeded: usize,
    /// Keys of redeems whose connection was refused (never sent).
    redeems_refused: Vec<String>,
    /// Acceptances whose connection was refused.
    accepts_refused: usize,
    /// Any other answer: a failure of the test.
    unexpected: Vec<String>,
    /// 2xx answers to requests sent after the kill.
    ok_after_kill: usize,
}

fn target(base: &str, token: &str, project: &str) -> Target {
    Target {
        base: base.to_owned(),
        token: token.to_owned(),
        project: project.to_owned(),
    }
}

/// One worker: alternately a redeem (new idempotency key) and a consent
/// acceptance, on its target; on a request without an answer it moves to
/// the next target. Stops when `stop` is set.
async fn drive(
    i: usize,
    users: u32,
    targets: Vec<Target>,
    seeded: Seeded,
    stop: Arc<AtomicBool>,
    killed: Arc<AtomicBool>,
    ledger: Arc<Mutex<Ledger>>,
) {
    let client = load::client();
    let mut t = i % targets.len();
    let mut n = 0u32;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let target = &targets[t];
        let after_kill = killed.load(Ordering::SeqCst);
        let user = format!("user-{}", (u32::try_from(i).unwrap() * 7 + n * 13) % users);
        let answered = if n.is_multiple_of(2) {
            let key = format!("{}-w{i}-{n}", seeded.code);
            let points = 1 + n % 5;
            match load::redeem(&client, target, &seeded, &user, points, &key).await {
                Ok(res) => {
                    let status = res.status().as_u16();
                    let body: serde_json::Value = res.json().await.unwrap_or_default();
                    let mut l = ledger.lock().unwrap();
                    match status {
                        201 => {
                            let id = body["id"].as_str().unwrap().to_owned();
                            l.redeemed.push((key, id));
                            l.ok_after_kill += usize::from(after_kill);
                        }
                        409 if body["code"] == "quota_exceeded" => l.exceeded += 1,
                        _ => l.unexpected.push(format!("redeem {status} {body}")),
                    }
                    true
                }
                Err(e) => {
                    let mut l = ledger.lock().unwrap();
                    if e.is_connect() {
                        l.redeems_refused.push(key);
                    } else {
                        l.redeems_in_doubt.push((key, user, points));
                    }
                    false
                }
            }
        } else {
            match load::accept(&client, target, &seeded, &user).await {
                Ok(res) => {
                    let status = res.status().as_u16();
                    let body: serde_json::Value = res.json().await.unwrap_or_default();
                    let mut l = ledger.lock().unwrap();
                    if status == 201 {
                        l.accepted.push(body["id"].as_str().unwrap().to_owned());
                        l.ok_after_kill += usize::from(after_kill);
                    } else {
                        l.unexpected.push(format!("accept {status} {body}"));
                    }
                    true
                }
                Err(e) => {
                    let mut l = ledger.lock().unwrap();
                    if e.is_connect() {
                        l.accepts_refused += 1;
                    } else {
                        l.accepts_in_doubt += 1;
                    }
                    false
                }
            }
        };
        if !answered {
            t = (t + 1) % targets.len();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Runs the workers over `targets` until at least `min_each` redeems were
/// answered (201 or 409) and `min_each` acceptances acknowledged (20 s at
/// most), kills `victim`, lets the
/// workers go on for `after` (on the survivors, if any), and stops them.
async fn traffic_and_kill(
    targets: &[Target],
    seeded: &Seeded,
    victim: &mut ServerProcess,
    min_each: usize,
    after: Duration,
    clients: Clients,
) -> Ledger {
    let stop = Arc::new(AtomicBool::new(false));
    let killed = Arc::new(AtomicBool::new(false));
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let workers: Vec<_> = (0..clients.workers)
        .map(|i| {
            tokio::spawn(drive(
                i,
                clients.users,
                targets.to_vec(),
                seeded.clone(),
                stop.clone(),
                killed.clone(),
                ledger.clone(),
            ))
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        {
            let l = ledger.lock().unwrap();
            if l.redeemed.len() + l.exceeded >= min_each && l.accepted.len() >= min_each {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "too few writes acknowledged in 20 s: {l:?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Mid-stream: every worker has a request in flight or about to be.
    victim.kill();
    killed.store(true, Ordering::SeqCst);
    tokio::time::sleep(after).await;
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        w.await.unwrap();
    }
    Arc::try_unwrap(ledger).unwrap().into_inner().unwrap()
}

/// The checks after the crash, through `store` (the library's store API)
/// and over HTTP on `live` (a server that runs now).
async fn verify<S: RedemptionStore + ContentStore>(
    store: &S,
    live: &Target,
    seeded: &Seeded,
    ledger: &Ledger,
) {
    let project = live.project.as_str();
    eprintln!(
        "acknowledged: {} acceptances, {} redeems, {} quota-exceeded; in flight at the kill: \
         {} acceptances, {} redeems; refused after it: {} acceptances, {} redeems; \
         2xx after the kill: {}",
        ledger.accepted.len(),
        ledger.redeemed.len(),
        ledger.exceeded,
        ledger.accepts_in_doubt,
        ledger.redeems_in_doubt.len(),
        ledger.accepts_refused,
        ledger.redeems_refused.len(),
        ledger.ok_after_kill
    );
    assert!(ledger.unexpected.is_empty(), "{:?}", ledger.unexpected);
    let client = load::client();

    // Every acknowledged acceptance is stored, and served.
    for id in &ledger.accepted {
        let stored = store
            .content(project, ContentType::ConsentAcceptance, id)
            .await
            .unwrap();
        assert!(stored.is_some(), "acknowledged acceptance {id} lost");
        let url = live.cms(&format!("svc-consent-acceptance-v1/{id}"));
        let res = live
            .req(&client, reqwest::Method::GET, &url)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "acceptance {id} over HTTP");
    }
    let total = store
        .list_content(
            project,
            ContentType::ConsentAcceptance,
            &ContentQuery::default(),
        )
        .await
        .unwrap()
        .total;
    let acked = ledger.accepted.len() as u64;
    assert!(
        (acked..=acked + ledger.accepts_in_doubt as u64).contains(&total),
        "{total} acceptances stored; {acked} acknowledged, {} in flight",
        ledger.accepts_in_doubt
    );

    // Every acknowledged redemption is stored, COMPLETE, under its key.
    for (key, id) in &ledger.redeemed {
        let r = store.redemption_by_key(project, key).await.unwrap();
        let r = r.unwrap_or_else(|| panic!("acknowledged redemption {key} lost"));
        assert_eq!(
            (r.id.to_string(), r.status),
            (id.clone(), TxStatus::Complete)
        );
    }
    for key in &ledger.redeems_refused {
        let r = store.redemption_by_key(project, key).await.unwrap();
        assert!(r.is_none(), "a redeem never sent is stored: {key}");
    }
    let mut in_doubt_stored = Vec::new();
    for (key, _, _) in &ledger.redeems_in_doubt {
        in_doubt_stored.push(
            store
                .redemption_by_key(project, key)
                .await
                .unwrap()
                .is_some(),
        );
    }
    eprintln!(
        "in-flight redeems found stored after the kill: {} of {}",
        in_doubt_stored.iter().filter(|&&s| s).count(),
        in_doubt_stored.len()
    );
    let recorded = all_redemptions(store, project, &seeded.code).await;
    let acked = ledger.redeemed.len();
    assert!(
        (acked..=acked + ledger.redeems_in_doubt.len()).contains(&recorded),
        "{recorded} redemptions stored; {acked} acknowledged, {} in flight",
        ledger.redeems_in_doubt.len()
    );
    assert_quotas(store, project, seeded).await;

    // A redeem in flight at the kill, retried with its key: replayed
    // exactly when it had been recorded; otherwise recorded now, or refused
    // by its quota. Quotas still balance afterwards.
    for ((key, user, points), was_stored) in ledger.redeems_in_doubt.iter().zip(in_doubt_stored) {
        let res = load::redeem(&client, live, seeded, user, *points, key)
            .await
            .unwrap();
        let status = res.status().as_u16();
        let replayed = res.headers().get("idempotent-replayed").is_some();
        let expected: &[u16] = if was_stored { &[201] } else { &[201, 409] };
        assert!(
            expected.contains(&status) && replayed == was_stored,
            "retry of in-flight redeem {key} (stored: {was_stored}): {status}, replayed: {replayed}"
        );
    }
    assert_quotas(store, project, seeded).await;
    let http = load::check_quotas(&client, live, seeded).await.unwrap();
    assert!(http.holds(), "over HTTP: {http:?}");
}

/// Number of redemptions of `code`.
async fn all_redemptions<S: RedemptionStore>(store: &S, project: &str, code: &str) -> usize {
    let query = RedemptionQuery {
        campaign_code: Some(code.to_owned()),
        size: 1000,
        ..RedemptionQuery::default()
    };
    let page = store.list_redemptions(project, &query).await.unwrap();
    usize::try_from(page.total).unwrap()
}

/// Through the store: each key's usage is within its limit and equals the
/// sum of the COMPLETE redemptions charged to it.
async fn assert_quotas<S: RedemptionStore>(store: &S, project: &str, seeded: &Seeded) {
    let mut charged: BTreeMap<String, Decimal> = BTreeMap::new();
    let mut page = 0;
    loop {
        let query = RedemptionQuery {
            campaign_code: Some(seeded.code.clone()),
            page,
            size: 1000,
            ..RedemptionQuery::default()
        };
        let items = store.list_redemptions(project, &query).await.unwrap().items;
        for r in items.iter().filter(|r| r.status == TxStatus::Complete) {
            for q in &r.quotas {
                *charged.entry(q.key.clone()).or_default() += q.amount;
            }
        }
        if items.len() < 1000 {
            break;
        }
        page += 1;
    }
    let campaign: Uuid = seeded.campaign_id.parse().unwrap();
    let usage = store.campaign_quota_usage(project, campaign).await.unwrap();
    let used: BTreeMap<String, Decimal> = usage
        .iter()
        .filter(|u| !u.used.is_zero())
        .map(|u| (u.key.clone(), u.used))
        .collect();
    for u in &usage {
        let limit = u.limit.unwrap();
        assert!(u.used <= limit, "{}: {} > {limit}", u.key, u.used);
    }
    assert_eq!(used, charged, "quota usage vs COMPLETE charges");
    assert!(
        !used.is_empty() && used.keys().any(|k| k.ends_with("-points")),
        "the run charged no quota: {used:?}"
    );
}

fn new_project() -> String {
    format!("crash-{}", &load::new_secret()[..12])
}

fn token(secret: &str, project: &str) -> String {
    Claims::all_scopes("crash", &[project], Duration::from_secs(3600))
        .sign_hs256(secret.as_bytes())
        .unwrap()
}

async fn seed(target: &Target) -> Seeded {
    let code = format!("CRASH-{}", &load::new_secret()[..8]).to_uppercase();
    load::seed(&load::client(), target, &code, LIMITS)
        .await
        .unwrap()
}

/// SQLite: SIGKILL the only server mid-stream, start a new process on the
/// same file, and check.
async fn sqlite_killed_mid_stream(clients: Clients) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("crash.db").display());
    let secret = load::new_secret();
    let project = new_project();
    let token = token(&secret, &project);

    let mut first = ServerProcess::spawn(CHILD, &url, &secret, dir.path(), "first").await;
    let t1 = target(&first.base, &token, &project);
    let seeded = seed(&t1).await;
    let ledger = traffic_and_kill(
        &[t1],
        &seeded,
        &mut first,
        80,
        Duration::from_millis(200),
        clients,
    )
    .await;

    let second = ServerProcess::spawn(CHILD, &url, &secret, dir.path(), "second").await;
    let t2 = target(&second.base, &token, &project);
    let store = SqliteStore::open(&url).await.unwrap();
    verify(&store, &t2, &seeded, &ledger).await;
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_server_killed_mid_stream_loses_no_acknowledged_write() {
    sqlite_killed_mid_stream(FEW).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_server_killed_under_64_clients_loses_no_acknowledged_redeem() {
    sqlite_killed_mid_stream(MANY).await;
}

/// PostgreSQL: two servers on one database, traffic over both; SIGKILL one
/// mid-stream; the survivor keeps serving; check.
async fn postgres_one_of_two_killed_mid_stream(clients: Clients) {
    let Some(base_url) = pg_url() else { return };
    let (url, _schema) = fresh_schema(&base_url, "crash").await;
    let dir = tempfile::tempdir().unwrap();
    let secret = load::new_secret();
    let project = new_project();
    let token = token(&secret, &project);

    let mut victim = ServerProcess::spawn(CHILD, &url, &secret, dir.path(), "victim").await;
    let survivor = ServerProcess::spawn(CHILD, &url, &secret, dir.path(), "survivor").await;
    let tv = target(&victim.base, &token, &project);
    let ts = target(&survivor.base, &token, &project);
    let seeded = seed(&tv).await;
    let ledger = traffic_and_kill(
        &[tv, ts.clone()],
        &seeded,
        &mut victim,
        80,
        Duration::from_secs(1),
        clients,
    )
    .await;
    assert!(
        ledger.ok_after_kill > 0,
        "the surviving server answered nothing after the kill: {ledger:?}"
    );
    let store = PostgresStore::connect(&url).await.unwrap();
    verify(&store, &ts, &seeded, &ledger).await;
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_one_of_two_servers_killed_mid_stream_loses_no_acknowledged_write() {
    postgres_one_of_two_killed_mid_stream(FEW).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_one_of_two_servers_killed_under_64_clients_loses_no_acknowledged_redeem() {
    postgres_one_of_two_killed_mid_stream(MANY).await;
}

/// Two servers started with `--demo` at the same moment on one database:
/// both start; one loads the sample data, the other finds it; nothing is
/// stored twice.
async fn demo_started_twice<S: ContentStore + CampaignStore>(
    url: &str,
    store: impl std::future::Future<Output = S>,
) {
    let args = || load::server::Args {
        addr: ([127, 0, 0, 1], 0).into(),
        database_url: url.to_owned(),
        jwt_secret: Some(load::new_secret()),
        jwt_public_key_file: None,
        demo: true,
        serve: load::server::ServeFlags::default(),
        ..Default::default()
    };
    let (a, b) = tokio::join!(
        Box::pin(load::server::start(args(), std::future::pending())),
        Box::pin(load::server::start(args(), std::future::pending())),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(a.demo && b.demo);
    let store = store.await;
    let campaigns = store
        .list_campaigns("demo", &CampaignQuery::default())
        .await
        .unwrap();
    let mut codes: Vec<String> = campaigns.items.into_iter().map(|c| c.ref_code).collect();
    codes.sort();
    assert_eq!(codes, ["CART10", "FREEGIFT", "WELCOME50"]);
    for (content_type, count) in [
        (ContentType::PrivacyNotice, 1),
        (ContentType::Consent, 1),
        (ContentType::Purpose, 2),
    ] {
        let page = store
            .list_content("demo", content_type, &ContentQuery::default())
            .await
            .unwrap();
        assert_eq!(page.total, count, "{content_type:?}: {:?}", page.items);
    }
    a.done.abort();
    b.done.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_demo_started_twice_at_once_loads_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo.db");
    let url = format!("sqlite://{}", path.display());
    demo_started_twice(&url, async {
        SqliteStore::open(path.to_str().unwrap()).await.unwrap()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_demo_started_twice_at_once_loads_once() {
    let Some(base_url) = pg_url() else { return };
    let (url, _schema) = fresh_schema(&base_url, "demo").await;
    demo_started_twice(&url, async { PostgresStore::connect(&url).await.unwrap() }).await;
}
