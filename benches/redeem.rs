//! Redeem throughput of each store, with 1 and 8 concurrent callers.
//!
//! ```sh
//! ACCORD_TEST_PG_URL=postgres://postgres@127.0.0.1:5432/test \
//!     cargo bench --bench redeem --features sqlite,postgres
//! ```
//!
//! Each redeem is what a checkout does: a fresh idempotency key and quota
//! charges far from their limits, in two shapes:
//!
//! - `hot`: one charge to a campaign-wide key (one row that every redeem of
//!   the campaign updates, so they queue on its lock until commit) and one
//!   to a per-user key (1000 users in turn);
//! - `spread`: the per-user charge only (no shared row).
//!
//! Criterion's `thrpt` line is redeems per second. The memory store is the
//! baseline; SQLite runs on a file in a temporary directory (WAL,
//! `synchronous = FULL`: every commit is on disk); PostgreSQL runs in a
//! schema of its own that is dropped afterwards (skipped, with a message,
//! without `ACCORD_TEST_PG_URL`).
#![allow(clippy::unwrap_used)] // a benchmark that cannot set up should stop
#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

mod pg_schema;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use accord::campaign::{
    ActionTx, Campaign, CampaignStatus, QuotaCharge, Redemption, Then, TxStatus,
};
use accord::store::memory::MemoryStore;
use accord::store::sqlite::SqliteStore;
use accord::store::{CampaignStore, RedeemOutcome, RedemptionPlan, RedemptionStore};
use chrono::Utc;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rust_decimal::Decimal;
use tokio::runtime::Runtime;
use uuid::Uuid;

const CALLERS: [u64; 2] = [1, 8];

fn campaign(project: &str) -> Campaign {
    let now = accord::clock::truncate_micros(Utc::now());
    Campaign {
        id: Uuid::new_v4(),
        name: "Bench".into(),
        description: None,
        image_url: None,
        start_date: now,
        end_date: now + chrono::Duration::days(1),
        ref_code: "BENCH".into(),
        status: CampaignStatus::Enable,
        priority: 1,
        channel: None,
        group_name: None,
        stacking: None,
        time_zone: None,
        status_schedule: Vec::new(),
        quotas: Vec::new(),
        rules: Vec::new(),
        project_id: project.into(),
        version: 1,
        active: false,
        created_by: "bench".into(),
        last_modified_by: "bench".into(),
        created_date: now,
        last_modified_date: now,
    }
}

/// The `n`th redeem of the run; `hot`: with the campaign-wide charge.
fn plan(c: &Campaign, n: u64, hot: bool) -> RedemptionPlan {
    let user = format!("user-{}", n % 1000);
    let charge = |key: String| QuotaCharge {
        key,
        amount: Decimal::ONE,
        limit: Decimal::from(i64::MAX),
        window: None,
    };
    let mut quotas = vec![charge(format!("BENCH-{user}"))];
    if hot {
        quotas.push(charge("BENCH".into()));
    }
    quotas.sort_by(|a, b| a.key.cmp(&b.key));
    RedemptionPlan {
        redemption: Redemption {
            id: Uuid::new_v4(),
            project_id: c.project_id.clone(),
            campaign_id: c.id,
            campaign_code: c.ref_code.clone(),
            campaign_version: 1,
            status: TxStatus::Complete,
            user_id: Some(user),
            channel: None,
            idempotency_key: Some(Uuid::new_v4().to_string()),
            request_fingerprint: None,
            action_txs: vec![ActionTx {
                status: TxStatus::Complete,
                then: Then {
                    action: Some("DISCOUNT".into()),
                    internal_action: false,
                    action_ref: "a1".into(),
                    data: Vec::new(),
                    ..Then::default()
                },
            }],
            quotas,
            code: None,
            created_date: accord::clock::truncate_micros(Utc::now()),
            cancelled_date: None,
        },
    }
}

/// Runs `total` redeems with `callers` concurrent callers; the time taken.
async fn run<S>(store: &Arc<S>, c: &Arc<Campaign>, hot: bool, callers: u64, total: u64) -> Duration
where
    S: CampaignStore + RedemptionStore + 'static,
{
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..callers {
        let (store, c, next) = (Arc::clone(store), Arc::clone(c), Arc::clone(&next));
        tasks.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    break;
                }
                let outcome = store.redeem(&plan(&c, n, hot)).await.unwrap();
                assert!(matches!(outcome, RedeemOutcome::Recorded(_)));
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    start.elapsed()
}

fn bench_store<S>(c: &mut Criterion, rt: &Runtime, name: &str, store: S)
where
    S: CampaignStore + RedemptionStore + 'static,
{
    let store = Arc::new(store);
    let campaign = Arc::new(campaign(&format!("bench-{}", Uuid::new_v4())));
    rt.block_on(store.insert_campaign(&campaign)).unwrap();
    let mut group = c.benchmark_group(format!("redeem/{name}"));
    group
        .throughput(Throughput::Elements(1))
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for (shape, hot) in [("hot", true), ("spread", false)] {
        for callers in CALLERS {
            let id = BenchmarkId::new(shape, format!("{callers}-callers"));
            group.bench_with_input(id, &callers, |b, &callers| {
                b.iter_custom(|iters| rt.block_on(run(&store, &campaign, hot, callers, iters)));
            });
        }
    }
    group.finish();
}

fn redeem(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();

    bench_store(c, &rt, "memory", MemoryStore::new());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    let sqlite = rt
        .block_on(SqliteStore::open(path.to_str().unwrap()))
        .unwrap();
    bench_store(c, &rt, "sqlite", sqlite);

    let Some(pg) = pg_schema::BenchSchema::open(&rt, "redeem") else {
        return;
    };
    bench_store(c, &rt, "postgres", pg.store.clone());
    pg.drop_schema(&rt);
}

criterion_group!(benches, redeem);
criterion_main!(benches);
