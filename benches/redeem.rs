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
//! `ACCORD_BENCH_REDEMPTIONS=1000000` runs no criterion bench: it fills
//! each SQL store with that many redemptions and reports redeem latency
//! and the quota-usage reads at that size (see `scale` below);
//! `ACCORD_BENCH_STORES=sqlite` or `postgres` runs one of the two;
//! `ACCORD_BENCH_FILL=user` fills with per-user charges alone.
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
use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
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

/// Users the redeems of a criterion run take turns as.
const USERS: u64 = 1000;

/// The `n`th redeem of the run, by user `n % users`; `hot`: with the
/// campaign-wide charge. Checked against the stored campaign in its
/// transaction, as the service plans a redeem of one campaign by refCode
/// from its snapshot.
fn plan(c: &Campaign, n: u64, hot: bool, users: u64) -> RedemptionPlan {
    let user = format!("user-{}", n % users);
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
            id: Uuid::now_v7(),
            project_id: c.project_id.clone(),
            campaign_id: c.id,
            campaign_code: c.ref_code.clone(),
            campaign_version: c.version,
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
        verify_campaign: true,
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
                let outcome = store.redeem(&plan(&c, n, hot, USERS)).await.unwrap();
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

fn main() {
    if let Ok(n) = std::env::var("ACCORD_BENCH_REDEMPTIONS") {
        scale::run(n.parse().expect("ACCORD_BENCH_REDEMPTIONS: a number"));
    } else {
        benches();
        Criterion::default().configure_from_args().final_summary();
    }
}

/// `ACCORD_BENCH_REDEMPTIONS=n`: instead of criterion, each SQL store
/// filled with `n` redemptions (64 callers, a new user each, every redeem
/// also charging the campaign-wide key), with redeem latency (p50, p99 of
/// 64 concurrent callers) measured empty and full, and the quota-usage
/// reads timed at that size. With `ACCORD_BENCH_FILL=user` the fill
/// charges the new user's key alone (the timed redeems, empty and full,
/// still charge both): the tables reach the same number of redemptions and
/// user keys without every redeem queueing on the one campaign-wide row.
/// On a PostgreSQL server whose autovacuum is off, [`Vacuum`] stands in
/// for it.
mod scale {
    use super::{
        campaign, pg_schema, plan, Arc, AtomicU64, Campaign, CampaignStore, Duration, Instant,
        Ordering, RedeemOutcome, RedemptionStore, SqliteStore, Uuid,
    };

    /// Concurrent callers.
    const CALLERS: u64 = 64;
    /// Redeems that ended at the store's time limit.
    static TIMEOUTS: AtomicU64 = AtomicU64::new(0);
    /// Redeems whose latency is sampled, empty and full, for `total`.
    fn sample(total: u64) -> u64 {
        (total / 10).clamp(1000, 20_000)
    }

    /// Runs redeems `from..to` with [`CALLERS`] callers, `hot`: also
    /// charging the campaign-wide key; each one's latency.
    async fn redeems<S: RedemptionStore + 'static>(
        store: &Arc<S>,
        c: &Arc<Campaign>,
        hot: bool,
        from: u64,
        to: u64,
    ) -> Vec<Duration> {
        let next = Arc::new(AtomicU64::new(from));
        let mut tasks = Vec::new();
        for _ in 0..CALLERS {
            let (store, c, next) = (Arc::clone(store), Arc::clone(c), Arc::clone(&next));
            tasks.push(tokio::spawn(async move {
                let mut took = Vec::new();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= to {
                        return took;
                    }
                    let p = plan(&c, n, hot, u64::MAX);
                    let began = Instant::now();
                    match store.redeem(&p).await {
                        Ok(outcome) => assert!(matches!(outcome, RedeemOutcome::Recorded(_))),
                        // The store's time limit: counted, and the redeem
                        // may still complete (a fill does not retry it).
                        Err(e) if e.code() == "store_timeout" => {
                            TIMEOUTS.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("redeem {n}: {e}"),
                    }
                    took.push(began.elapsed());
                }
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        all.sort();
        all
    }

    fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1000.0
    }

    fn pct(sorted: &[Duration], q: usize) -> Duration {
        sorted[(sorted.len() * q / 100).min(sorted.len() - 1)]
    }

    /// Median of `n` runs of `read`.
    async fn timed<F, Fut>(n: usize, mut read: F) -> Duration
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let mut took = Vec::new();
        for _ in 0..n {
            let began = Instant::now();
            read().await;
            took.push(began.elapsed());
        }
        took.sort();
        took[took.len() / 2]
    }

    // Rates as f64, for display only.
    #[allow(clippy::cast_precision_loss)]
    async fn store_at_scale<S>(name: &str, store: S, total: u64, vacuum: Option<&Vacuum>)
    where
        S: CampaignStore + RedemptionStore + 'static,
    {
        let store = Arc::new(store);
        let sample = sample(total);
        let c = Arc::new(campaign(&format!("bench-{}", Uuid::new_v4())));
        store.insert_campaign(&c).await.unwrap();
        let began = Instant::now();
        let empty = redeems(&store, &c, true, 0, sample).await;
        let empty_rate = sample as f64 / began.elapsed().as_secs_f64();
        if let Some(vacuum) = vacuum {
            vacuum.run().await;
        }
        let fill_hot = std::env::var("ACCORD_BENCH_FILL").as_deref() != Ok("user");
        let mut done = sample;
        let began = Instant::now();
        while done < total {
            let to = (done + 100_000).min(total);
            redeems(&store, &c, fill_hot, done, to).await;
            done = to;
            if let Some(vacuum) = vacuum {
                vacuum.run().await;
            }
            eprintln!(
                "{name}: {done} redemptions, {:.0}/s",
                (done - sample) as f64 / began.elapsed().as_secs_f64()
            );
        }
        let fill_rate = (total - sample) as f64 / began.elapsed().as_secs_f64();
        let began = Instant::now();
        let full = redeems(&store, &c, true, total, total + sample).await;
        let full_rate = sample as f64 / began.elapsed().as_secs_f64();
        let project = c.project_id.clone();
        let keys = vec!["BENCH".to_owned(), format!("BENCH-user-{}", total / 2)];
        let usage = timed(200, || async {
            assert_eq!(store.quota_usage(&project, &keys).await.unwrap().len(), 2);
        })
        .await;
        let by_prefix = timed(50, || async {
            let page = store
                .quota_usage_by_prefix(&project, "BENCH-user-5", None, 100)
                .await
                .unwrap();
            assert_eq!(page.len(), 100);
        })
        .await;
        let timeouts = TIMEOUTS.swap(0, Ordering::Relaxed);
        let whole = timed(3, || async {
            let all = store.campaign_quota_usage(&project, c.id).await.unwrap();
            // Every user's key and the campaign-wide one.
            assert!(all.len() as u64 + timeouts > total + sample);
        })
        .await;
        // Search's view of charged keys: every key of the project read.
        let charged = timed(3, || async {
            let all = store.charged_keys(&project, None).await.unwrap();
            assert!(all.keys.len() as u64 + timeouts > total + sample);
        })
        .await;
        println!(
            "{name}: {sample} redeems, {CALLERS} callers, empty: {empty_rate:.0}/s, p50 {:.2} ms, \
             p99 {:.2} ms",
            ms(pct(&empty, 50)),
            ms(pct(&empty, 99))
        );
        let fill = if fill_hot {
            "each a user's key and the campaign-wide key"
        } else {
            "each a user's key alone"
        };
        println!("{name}: filled to {total} at {fill_rate:.0}/s ({fill})");
        println!(
            "{name}: {sample} redeems at {total}: {full_rate:.0}/s, p50 {:.2} ms, p99 {:.2} ms",
            ms(pct(&full, 50)),
            ms(pct(&full, 99))
        );
        println!(
            "{name}: at {total}: quota_usage of 2 keys {:.3} ms; quota_usage_by_prefix, \
             100 keys {:.3} ms; campaign_quota_usage (every key) {:.0} ms",
            ms(usage),
            ms(by_prefix),
            ms(whole)
        );
        println!(
            "{name}: at {total}: charged_keys (every key, search's view) {:.0} ms; \
             redeems that hit the store's time limit: {timeouts}",
            ms(charged)
        );
    }

    /// A PostgreSQL server without autovacuum (`autovacuum = off`): the
    /// schema's tables vacuumed and analyzed after the first timed redeems
    /// and after every chunk of the fill, as autovacuum would keep them.
    /// Without statistics the planner takes the tables for empty, and a
    /// plan a connection keeps (most likely the foreign-key check of every
    /// charge's insert) reads the whole redemption table once it is not.
    pub struct Vacuum {
        admin: sqlx::PgPool,
        schema: String,
    }

    impl Vacuum {
        /// `Some` when the server's autovacuum is off (said on stdout).
        pub async fn needed(admin: &sqlx::PgPool, schema: &str) -> Option<Self> {
            let on: String = sqlx::query_scalar("SHOW autovacuum")
                .fetch_one(admin)
                .await
                .unwrap();
            println!("postgres: autovacuum = {on}");
            (on == "off").then(|| {
                println!(
                    "postgres: VACUUM ANALYZE of the schema's tables after every 100,000 \
                     redemptions stands in for it"
                );
                Vacuum {
                    admin: admin.clone(),
                    schema: schema.to_owned(),
                }
            })
        }

        /// `VACUUM ANALYZE` of every table of the schema.
        pub async fn run(&self) {
            let tables: Vec<String> =
                sqlx::query_scalar("SELECT tablename FROM pg_tables WHERE schemaname = $1")
                    .bind(&self.schema)
                    .fetch_all(&self.admin)
                    .await
                    .unwrap();
            for t in tables {
                let sql = format!("VACUUM ANALYZE \"{}\".\"{t}\"", self.schema);
                sqlx::query(&sql).execute(&self.admin).await.unwrap();
            }
        }
    }

    pub fn run(total: u64) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        println!(
            "load average before: {}",
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .trim()
        );
        let stores = std::env::var("ACCORD_BENCH_STORES").unwrap_or_default();
        let wanted = |name: &str| stores.is_empty() || stores.split(',').any(|s| s == name);
        if wanted("sqlite") {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("scale.db");
            let sqlite = rt
                .block_on(SqliteStore::open(path.to_str().unwrap()))
                .unwrap();
            rt.block_on(store_at_scale("sqlite", sqlite, total, None));
        }
        let pg = wanted("postgres")
            .then(|| pg_schema::BenchSchema::open(&rt, "scale"))
            .flatten();
        if let Some(pg) = pg {
            let vacuum = rt.block_on(Vacuum::needed(&pg.admin, &pg.schema));
            rt.block_on(store_at_scale(
                "postgres",
                pg.store.clone(),
                total,
                vacuum.as_ref(),
            ));
            pg.drop_schema(&rt);
        }
        println!(
            "load average after: {}",
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .trim()
        );
    }
}
