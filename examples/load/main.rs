//! A load generator for the Accord HTTP service: mixed search, redeem and
//! consent-acceptance traffic from keep-alive clients, then a check that no
//! quota was oversold.
//!
//! ```sh
//! # Against a running server (its development token, project "demo"):
//! cargo run --release --example load -- --url http://127.0.0.1:8080 --token "$TOKEN" --seconds 30
//! # Self-hosted: an in-process server on loopback, on a new SQLite file …
//! cargo run --release --example load -- --self-host --seconds 60 --concurrency 32
//! # … or on PostgreSQL (a project of its own each run):
//! cargo run --release --example load -- --self-host --database-url postgres://postgres@127.0.0.1/test
//! ```
//!
//! Each run creates its own campaign (a new refCode) with three quotas — per
//! user (count), in all (count), and points (the sum of the request's
//! `points`) — and its own consent, then runs `--concurrency` workers for
//! `--seconds` (at most 60). Per operation it prints count, rate, p50/p99
//! latency and the 5xx count; then it reads every quota's usage and every
//! redemption through the API and checks that each key's usage is within
//! its limit and equals the sum of the COMPLETE redemptions charged to it.
//! It exits non-zero on any 5xx, transport error or oversold quota.
//!
//! The same code runs for a few seconds in `cargo test` (tests/reliability/load_smoke.rs)
//! and provides the traffic of tests/reliability/crash_safety.rs and tests/reliability/db_faults.rs.
//!
//! `--workload storefront` instead creates the 200 campaigns of the
//! benchmark generator's storefront workload (`benches/workload/mod.rs`,
//! seed 42: 1–3 rules of about 4 conditions each, about 5% matching a
//! request) through the API, then sends only searches: the generator's 1,000
//! requests (carts of 5 items, 10 attributes), round-robin. It prints
//! searches per second, p50/p99 and the actions returned per search on
//! average, so that a reader sees the searches did real work:
//!
//! ```sh
//! cargo run --release --example load -- --self-host --workload storefront --seconds 30 --concurrency 16
//! ```
//!
//! `--workload redeem-hot` and `--workload redeem-user` send redeems only,
//! a new user each: the first on the mixed campaign (every redeem updates
//! its two campaign-wide keys), the second on a campaign whose one quota is
//! per user (no two redeems share a key). The redeem throughput figures of
//! `docs/benchmarks.md` come from them:
//!
//! ```sh
//! cargo run --release --example load -- --self-host --workload redeem-hot --seconds 20 --concurrency 64
//! ```

use std::fmt::Write as _;
use std::time::Duration;

use accord::http::Claims;
use clap::Parser;

/// The `accord` server, started in-process (`server::start(server::Args
/// { … })`), here and in the reliability tests that include this file.
pub mod server {
    pub use accord::cli::serve::start;
    #[allow(unused_imports)] // the tests that include this file use them
    pub use accord::cli::{BoxError, ServeArgs as Args, ServeFlags, Started};
}

#[path = "api.rs"]
mod api;
#[path = "traffic.rs"]
mod traffic;
#[path = "../../benches/workload/mod.rs"]
mod workload;

pub use api::*;
use server::BoxError;
pub use traffic::*;

/// Mixed traffic against the Accord HTTP API.
#[derive(Debug, Parser)]
#[command(about)]
pub struct Args {
    /// Base URL of a running server (`http://127.0.0.1:8080`).
    #[arg(
        long,
        required_unless_present = "self_host",
        conflicts_with = "self_host"
    )]
    pub url: Option<String>,
    /// Bearer token with every scope for `--project` (`--url` only).
    #[arg(long, env = "TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Project to work in (`--url` only; self-hosting uses a new one).
    #[arg(long, default_value = "demo")]
    pub project: String,
    /// Start an in-process server on 127.0.0.1 instead of using `--url`.
    #[arg(long)]
    pub self_host: bool,
    /// Database of the self-hosted server: `sqlite://FILE`, `postgres://…`
    /// (default: a new SQLite file in a temporary directory).
    #[arg(long, requires = "self_host")]
    pub database_url: Option<String>,
    /// How long to send traffic (1 to 60 seconds).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=60))]
    pub seconds: u64,
    /// Concurrent clients (each keeps its connections alive).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub concurrency: u64,
    /// Distinct users redeeming (each may redeem `--per-user` times;
    /// default 2000). Storefront: the `n`-th search is made by user
    /// `u{n % users}` (default: the user of each generated request, 1,000
    /// in all), so a large value never repeats a per-user quota key.
    #[arg(long)]
    pub users: Option<u32>,
    /// Percent of requests that are searches (100: search only); the rest
    /// are redeems and consent acceptances, 3 to 2 (default 50; the
    /// storefront workload is search only).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub search_percent: Option<u32>,
    /// What to send: `mixed` (one campaign with three quotas; search,
    /// redeem and consent traffic, then the quota check), `storefront`
    /// (the benchmark's 200 storefront campaigns; searches only),
    /// `redeem-hot` (redeems only, a new user each, on the mixed campaign:
    /// two of its keys are campaign-wide) or `redeem-user` (the same with
    /// the per-user quota alone); both redeem workloads end with the quota
    /// check.
    #[arg(long, value_enum, default_value_t = WorkloadKind::Mixed)]
    pub workload: WorkloadKind,
    /// Redemptions allowed per user.
    #[arg(long, default_value_t = 3)]
    pub per_user: u32,
}

/// The traffic of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WorkloadKind {
    /// One campaign with three quotas; search, redeem and consent traffic.
    Mixed,
    /// The 200 storefront campaigns of the benchmark generator; searches.
    Storefront,
    /// Redeems only, each charging a per-user key and two campaign-wide
    /// keys (in all, points) that every redeem updates.
    RedeemHot,
    /// Redeems only, each charging its per-user key alone.
    RedeemUser,
}

/// A self-hosted server: stops when dropped.
pub struct SelfHosted {
    /// Where it listens, with a token for its project.
    pub target: Target,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// Ends when the server has stopped.
    pub done: Option<tokio::task::JoinHandle<Result<(), BoxError>>>,
}

impl SelfHosted {
    /// Stops the server gracefully and waits for it.
    pub async fn stop(mut self) -> Result<(), BoxError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.done.take() {
            Some(done) => done.await?,
            None => Ok(()),
        }
    }
}

impl Drop for SelfHosted {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A new secret of 64 hex digits.
pub fn new_secret() -> String {
    (0..4).fold(String::new(), |mut s, _| {
        let _ = write!(s, "{:016x}", rand::random::<u64>());
        s
    })
}

/// Starts the `accord` server on 127.0.0.1 (any free port) over
/// `database_url`, with a token for a new project.
pub async fn self_host(database_url: &str) -> Result<SelfHosted, BoxError> {
    let secret = new_secret();
    let project = format!("load-{}", &new_secret()[..12]);
    let token = Claims::all_scopes("load", &[&project], Duration::from_secs(3600))
        .sign_hs256(secret.as_bytes())?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = server::start(
        server::Args {
            addr: ([127, 0, 0, 1], 0).into(),
            database_url: database_url.to_owned(),
            jwt_secret: Some(secret),
            jwt_public_key_file: None,
            demo: false,
            serve: server::ServeFlags::default(),
            ..Default::default()
        },
        async {
            let _ = stopped.await;
        },
    )
    .await?;
    Ok(SelfHosted {
        target: Target {
            base: format!("http://{}", started.addr),
            token,
            project,
        },
        stop: Some(stop),
        done: Some(started.done),
    })
}

/// The outcome of [`run_load`].
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The traffic.
    pub report: Report,
    /// The quota check after it.
    pub quotas: QuotaCheck,
}

/// Seeds a campaign and a consent in `target`'s project, runs `mix`, then
/// checks the quotas.
pub async fn run_load(target: &Target, mix: Mix, per_user: u32) -> Result<Outcome, BoxError> {
    let limits = Limits {
        per_user,
        total: 1_000_000_000,
        points: 2_000_000_000,
    };
    run_with(target, mix, limits).await
}

/// [`run_load`] with the campaign's quotas `limits`.
pub async fn run_with(target: &Target, mix: Mix, limits: Limits) -> Result<Outcome, BoxError> {
    let client = client();
    let code = format!("LOAD-{}", &new_secret()[..10]).to_uppercase();
    let seeded = seed(&client, target, &code, limits).await?;
    let report = run(target, &seeded, mix).await;
    let quotas = check_quotas(&client, target, &seeded).await?;
    Ok(Outcome { report, quotas })
}

/// The outcome of [`run_storefront`].
#[derive(Debug, Clone)]
pub struct StorefrontOutcome {
    /// Campaigns created.
    pub campaigns: usize,
    /// Distinct search requests sent round-robin.
    pub requests: usize,
    /// The traffic (searches only).
    pub report: Report,
}

/// The seed of the storefront workload, as in the benches.
pub const STOREFRONT_SEED: u64 = 42;

/// Creates the storefront campaigns (`workload::storefront(42)`) in
/// `target`'s project through the API, then sends its search requests
/// round-robin from `concurrency` workers for `duration`; with `users`, the
/// `n`-th search is made by user `u{n % users}`.
pub async fn run_storefront(
    target: &Target,
    duration: Duration,
    concurrency: u64,
    users: Option<u32>,
) -> Result<StorefrontOutcome, BoxError> {
    use axum::body::Bytes;
    const MARK: &[u8] = b"\"load-user-placeholder\"";
    let w = workload::storefront(STOREFRONT_SEED);
    seed_campaigns(&client(), target, &w.campaigns).await?;
    let bodies = match users {
        None => Bodies::Fixed(
            w.requests
                .iter()
                .map(|r| serde_json::to_vec(r).map(Bytes::from))
                .collect::<Result<_, _>>()?,
        ),
        Some(users) => {
            let mut parts = Vec::with_capacity(w.requests.len());
            for r in &w.requests {
                let mut r = r.clone();
                r.attribute
                    .insert("userId".into(), "load-user-placeholder".into());
                let body = serde_json::to_vec(&r)?;
                let at = body
                    .windows(MARK.len())
                    .position(|w| w == MARK)
                    .ok_or("no userId in a request")?;
                parts.push((
                    Bytes::copy_from_slice(&body[..at]),
                    Bytes::copy_from_slice(&body[at + MARK.len()..]),
                ));
            }
            Bodies::PerUser {
                parts,
                users: u64::from(users.max(1)),
            }
        }
    };
    let report = run_searches(target, std::sync::Arc::new(bodies), duration, concurrency).await;
    Ok(StorefrontOutcome {
        campaigns: w.campaigns.len(),
        requests: w.requests.len(),
        report,
    })
}

/// The machine's load average (Linux), for the report.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "unknown".to_owned(),
        |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

/// The allocator of the `accord` command (`src/main.rs`), so that a
/// self-hosted server runs as the command does. Not in the tests that
/// include this file: they keep the system allocator.
#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[allow(dead_code)] // tests include this file as a module and call the pieces
fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let tmp = tempfile::tempdir()?;
        let hosted = if args.self_host {
            let url = match &args.database_url {
                Some(url) => url.clone(),
                None => format!("sqlite://{}", tmp.path().join("load.db").display()),
            };
            println!(
                "self-hosting on {}",
                url.split('@').next_back().unwrap_or(&url)
            );
            Some(self_host(&url).await?)
        } else {
            None
        };
        let target = match &hosted {
            Some(h) => h.target.clone(),
            None => Target {
                base: args.url.clone().ok_or("--url or --self-host")?,
                token: args
                    .token
                    .clone()
                    .ok_or("--token (or TOKEN) is required with --url")?,
                project: args.project.clone(),
            },
        };
        println!(
            "{} workers for {} s against {} (load average before: {})",
            args.concurrency,
            args.seconds,
            target.base,
            load_average()
        );
        if args.workload == WorkloadKind::Storefront {
            if args.search_percent.is_some_and(|p| p != 100) {
                return Err("the storefront workload is search only: --search-percent 100".into());
            }
            let duration = Duration::from_secs(args.seconds);
            let outcome = run_storefront(&target, duration, args.concurrency, args.users).await?;
            if let Some(h) = hosted {
                h.stop().await?;
            }
            return storefront_summary(&outcome);
        }
        let (mix, limits) = mix_of(&args);
        let outcome = run_with(&target, mix, limits).await?;
        print!("{}", outcome.report.table());
        println!(
            "elapsed {:.1} s; load average after: {}",
            outcome.report.elapsed.as_secs_f64(),
            load_average()
        );
        let q = &outcome.quotas;
        println!(
            "quotas: {} keys, {} COMPLETE redemptions, {} oversold, {} mismatched",
            q.keys,
            q.complete,
            q.oversold.len(),
            q.mismatched.len()
        );
        for line in q.oversold.iter().chain(&q.mismatched) {
            println!("  {line}");
        }
        if let Some(h) = hosted {
            h.stop().await?;
        }
        let (server_errors, transport) = (
            outcome.report.server_errors(),
            outcome.report.transport_errors(),
        );
        if server_errors > 0 || transport > 0 || !q.holds() {
            return Err(format!(
                "FAILED: {server_errors} 5xx, {transport} without answer, quotas hold: {}",
                q.holds()
            )
            .into());
        }
        println!("OK: no 5xx, no oversold quota");
        Ok(())
    })
}

/// The traffic and the campaign's quotas of a `mixed` or `redeem-…` run.
fn mix_of(args: &Args) -> (Mix, Limits) {
    let redeems_only = matches!(
        args.workload,
        WorkloadKind::RedeemHot | WorkloadKind::RedeemUser
    );
    let mix = Mix {
        duration: Duration::from_secs(args.seconds),
        concurrency: args.concurrency,
        // Redeems only: a new user almost every time.
        users: args
            .users
            .unwrap_or(if redeems_only { 1_000_000_000 } else { 2000 }),
        search_percent: args.search_percent.unwrap_or(50),
        redeems_only,
    };
    let hot = args.workload != WorkloadKind::RedeemUser;
    let limits = Limits {
        per_user: args.per_user,
        total: if hot { 1_000_000_000 } else { 0 },
        points: if hot { 2_000_000_000 } else { 0 },
    };
    (mix, limits)
}

/// Prints the storefront run; an error on any 5xx, 4xx or request without
/// an answer.
fn storefront_summary(outcome: &StorefrontOutcome) -> Result<(), BoxError> {
    let report = &outcome.report;
    print!("{}", report.table());
    let s = report.ops.get(&Op::Search).cloned().unwrap_or_default();
    // Display only.
    #[allow(clippy::cast_precision_loss)]
    let rate = s.ok as f64 / report.elapsed.as_secs_f64();
    println!(
        "storefront: {} campaigns, {} requests round-robin; {rate:.0} searches/s (2xx), \
         p50 {:.2} ms, p99 {:.2} ms, {:.2} actions per search (of {} answers parsed); elapsed {:.1} s; \
         load average after: {}",
        outcome.campaigns,
        outcome.requests,
        s.percentile(50).as_secs_f64() * 1000.0,
        s.percentile(99).as_secs_f64() * 1000.0,
        s.actions_per_search(),
        s.sampled,
        report.elapsed.as_secs_f64(),
        load_average()
    );
    let failed = s.client_errors + report.server_errors() + report.transport_errors();
    if failed > 0 || s.ok == 0 {
        return Err(format!("FAILED: {failed} searches without a 2xx answer").into());
    }
    println!("OK: every search answered 2xx");
    Ok(())
}
