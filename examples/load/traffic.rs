//! The traffic of the load generator: workers sending the mix, and what
//! they saw per operation.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::api::{accept, client, redeem, search, search_raw, Seeded, Target};

/// The operations of the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// POST search (half of the requests).
    Search,
    /// POST redeem (three in ten; one in twenty of them replays a key).
    Redeem,
    /// POST consent-acceptance (one in five).
    Consent,
}

/// What one operation saw.
#[derive(Debug, Default, Clone)]
pub struct OpStats {
    /// Requests sent.
    pub count: u64,
    /// 2xx answers.
    pub ok: u64,
    /// 4xx answers (a redeem past its quota is a 409).
    pub client_errors: u64,
    /// 5xx answers.
    pub server_errors: u64,
    /// Requests without an answer (connection refused, reset, timeout).
    pub transport_errors: u64,
    /// Latency of every answered request.
    pub latencies: Vec<Duration>,
    /// Actions in the sampled 2xx answers (storefront traffic only).
    pub actions: u64,
    /// 2xx answers whose actions were counted: one in
    /// [`ACTIONS_SAMPLE`] (parsing every answer would cost the load
    /// generator as much CPU as the server spends writing it).
    pub sampled: u64,
}

/// The storefront traffic counts the actions of one 2xx answer in this many.
pub const ACTIONS_SAMPLE: u64 = 10;

impl OpStats {
    fn merge(&mut self, other: OpStats) {
        self.count += other.count;
        self.ok += other.ok;
        self.client_errors += other.client_errors;
        self.server_errors += other.server_errors;
        self.transport_errors += other.transport_errors;
        self.latencies.extend(other.latencies);
        self.actions += other.actions;
        self.sampled += other.sampled;
    }

    /// Actions per sampled 2xx answer, on average.
    pub fn actions_per_search(&self) -> f64 {
        // Display only.
        #[allow(clippy::cast_precision_loss)]
        let avg = self.actions as f64 / self.sampled.max(1) as f64;
        avg
    }

    /// The `q`-th percentile latency (`q` in 0..=100), nearest rank.
    pub fn percentile(&self, q: usize) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        let rank = (q * sorted.len()).div_ceil(100).max(1);
        sorted[rank - 1]
    }
}

/// The traffic of a run, per operation.
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// How long the traffic ran.
    pub elapsed: Duration,
    /// Per operation.
    pub ops: BTreeMap<Op, OpStats>,
}

impl Report {
    /// 5xx answers of every operation.
    pub fn server_errors(&self) -> u64 {
        self.ops.values().map(|s| s.server_errors).sum()
    }

    /// Requests without an answer, of every operation.
    pub fn transport_errors(&self) -> u64 {
        self.ops.values().map(|s| s.transport_errors).sum()
    }

    /// The table printed at the end of a run.
    pub fn table(&self) -> String {
        let secs = self.elapsed.as_secs_f64();
        let mut out = format!(
            "{:<8} {:>8} {:>9} {:>9} {:>9} {:>7} {:>7} {:>5} {:>6}\n",
            "op", "count", "rate/s", "p50 ms", "p99 ms", "2xx", "4xx", "5xx", "no-ans"
        );
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        for (op, s) in &self.ops {
            // Display only: rates and milliseconds as f64.
            #[allow(clippy::cast_precision_loss)]
            let rate = s.count as f64 / secs;
            let _ = writeln!(
                out,
                "{:<8} {:>8} {:>9.1} {:>9.2} {:>9.2} {:>7} {:>7} {:>5} {:>6}",
                format!("{op:?}").to_lowercase(),
                s.count,
                rate,
                ms(s.percentile(50)),
                ms(s.percentile(99)),
                s.ok,
                s.client_errors,
                s.server_errors,
                s.transport_errors
            );
        }
        out
    }
}

/// How a run sends its traffic.
#[derive(Debug, Clone, Copy)]
pub struct Mix {
    /// How long.
    pub duration: Duration,
    /// Concurrent workers.
    pub concurrency: u64,
    /// Distinct users.
    pub users: u32,
    /// Percent of requests that are searches; the rest are redeems and
    /// consent acceptances, 3 to 2.
    pub search_percent: u32,
    /// Every request a redeem (`search_percent` ignored).
    pub redeems_only: bool,
}

/// Runs `mix.concurrency` workers for `mix.duration`, each with its own
/// keep-alive client; returns what they saw.
pub async fn run(target: &Target, seeded: &Seeded, mix: Mix) -> Report {
    let start = Instant::now();
    let deadline = start + mix.duration;
    let workers: Vec<_> = (0..mix.concurrency)
        .map(|i| {
            let (target, seeded) = (target.clone(), seeded.clone());
            tokio::spawn(async move { worker(i, &target, &seeded, mix, deadline).await })
        })
        .collect();
    let mut report = Report::default();
    for w in workers {
        for (op, stats) in w.await.expect("a load worker panicked") {
            report.ops.entry(op).or_default().merge(stats);
        }
    }
    report.elapsed = start.elapsed();
    report
}

async fn worker(
    i: u64,
    target: &Target,
    seeded: &Seeded,
    mix: Mix,
    deadline: Instant,
) -> BTreeMap<Op, OpStats> {
    let users = mix.users;
    let searches = if mix.redeems_only {
        0
    } else {
        mix.search_percent.min(100)
    };
    let redeems = if mix.redeems_only {
        100
    } else {
        searches + (100 - searches) * 3 / 5
    };
    let client = client();
    let mut rng = StdRng::seed_from_u64(rand::random::<u64>() ^ i);
    let mut stats: BTreeMap<Op, OpStats> = BTreeMap::new();
    let mut keys: Vec<String> = Vec::new();
    let mut n = 0u64;
    while Instant::now() < deadline {
        let user = format!("user-{}", rng.gen_range(0..users.max(1)));
        let roll = rng.gen_range(0..100);
        let began = Instant::now();
        let (op, res) = if roll < searches {
            let total = rng.gen_range(50..500);
            (Op::Search, search(&client, target, &user, total).await)
        } else if roll < redeems {
            let key = match keys.last() {
                Some(old) if rng.gen_ratio(1, 20) => old.clone(),
                _ => {
                    n += 1;
                    format!("{}-w{i}-{n}", seeded.code)
                }
            };
            let points = rng.gen_range(1..=5);
            let res = redeem(&client, target, seeded, &user, points, &key).await;
            keys.push(key);
            (Op::Redeem, res)
        } else {
            (Op::Consent, accept(&client, target, seeded, &user).await)
        };
        let s = stats.entry(op).or_default();
        s.count += 1;
        match res {
            Ok(res) => {
                let status = res.status();
                // Read the whole body: the connection goes back to the pool.
                let _ = res.bytes().await;
                s.latencies.push(began.elapsed());
                if status.is_success() {
                    s.ok += 1;
                } else if status.is_server_error() {
                    s.server_errors += 1;
                } else {
                    s.client_errors += 1;
                }
            }
            Err(_) => s.transport_errors += 1,
        }
    }
    stats
}

/// Search bodies, serialised once.
#[derive(Debug, Clone)]
pub enum Bodies {
    /// Sent as they are.
    Fixed(Vec<Bytes>),
    /// Each split around its `userId` value, which the `n`-th search sets to
    /// `u{n % users}`: a run of fewer than `users` searches never repeats a
    /// user (nor a per-user quota key).
    PerUser {
        /// The bytes before and after the `userId` value.
        parts: Vec<(Bytes, Bytes)>,
        /// Distinct users.
        users: u64,
    },
}

impl Bodies {
    fn len(&self) -> usize {
        match self {
            Bodies::Fixed(b) => b.len(),
            Bodies::PerUser { parts, .. } => parts.len(),
        }
    }

    /// The body of the `n`-th search.
    fn nth(&self, n: usize) -> Bytes {
        match self {
            Bodies::Fixed(b) => b[n % b.len()].clone(),
            Bodies::PerUser { parts, users } => {
                let (before, after) = &parts[n % parts.len()];
                let user = format!("\"u{}\"", n as u64 % users);
                let mut body = Vec::with_capacity(before.len() + user.len() + after.len());
                body.extend_from_slice(before);
                body.extend_from_slice(user.as_bytes());
                body.extend_from_slice(after);
                body.into()
            }
        }
    }
}

/// Runs `concurrency` workers for `duration`, each with its own keep-alive
/// client, sending the search `bodies` round-robin (one shared counter, so
/// every body is sent in turn whatever the number of workers); counts the
/// actions of one 2xx answer in [`ACTIONS_SAMPLE`].
pub async fn run_searches(
    target: &Target,
    bodies: Arc<Bodies>,
    duration: Duration,
    concurrency: u64,
) -> Report {
    let start = Instant::now();
    let deadline = start + duration;
    let next = Arc::new(AtomicUsize::new(0));
    let url: Arc<str> = target.campaign("/search").into();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (target, bodies, next, url) = (
                target.clone(),
                Arc::clone(&bodies),
                Arc::clone(&next),
                Arc::clone(&url),
            );
            tokio::spawn(async move {
                let client = client();
                let mut s = OpStats::default();
                while Instant::now() < deadline && bodies.len() > 0 {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let began = Instant::now();
                    s.count += 1;
                    match search_raw(&client, &target, &url, bodies.nth(n)).await {
                        Ok(res) => {
                            let status = res.status();
                            let body = res.bytes().await.unwrap_or_default();
                            s.latencies.push(began.elapsed());
                            if status.is_success() {
                                s.ok += 1;
                                if s.ok % ACTIONS_SAMPLE == 1 {
                                    s.sampled += 1;
                                    s.actions += actions_in(&body);
                                }
                            } else if status.is_server_error() {
                                s.server_errors += 1;
                            } else {
                                s.client_errors += 1;
                            }
                        }
                        Err(_) => s.transport_errors += 1,
                    }
                }
                s
            })
        })
        .collect();
    let mut stats = OpStats::default();
    for w in workers {
        stats.merge(w.await.expect("a search worker panicked"));
    }
    let mut report = Report {
        elapsed: start.elapsed(),
        ops: BTreeMap::new(),
    };
    report.ops.insert(Op::Search, stats);
    report
}

/// The number of actions of a search response (0 if it is not one).
fn actions_in(body: &[u8]) -> u64 {
    #[derive(serde::Deserialize)]
    struct Found {
        actions: Vec<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Found>(body).map_or(0, |f| f.actions.len() as u64)
}
