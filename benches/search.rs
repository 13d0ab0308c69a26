//! Search latency per workload: criterion's median, plus our own timing loop
//! over every request for p99 and searches per second on one core.
//!
//! Three rows per workload: `match` is [`Engine::matches`], which campaigns
//! fire (what the peer engines compute); `search` is the engine's whole
//! search, [`Engine::search`], with every fired benefit evaluated and every
//! quota key built; `service` is [`CampaignService::search`] over the memory
//! store, what an embedding program calls: the engine's search, the quota
//! usage of every hit (the service's usage cache, else the store), stacking
//! and the response's actions.
//!
//! `cargo bench --bench search` (add `-- storefront` to run the workloads
//! whose name contains `storefront`).
//!
//! For instruction counts under `valgrind --tool=callgrind`, which do not
//! depend on the machine's load, `ACCORD_BENCH_DRIVE=STEP:WORKLOAD:N[:R]`
//! runs step `STEP` (`match`, `search` or `service`) of the workload named
//! `WORKLOAD` over its requests (its first `R` requests) `N` times in turn
//! inside `drive`, and nothing else: `--toggle-collect='*drive*'` counts
//! only those searches.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use accord::campaign::{CampaignService, SearchOptions, SearchRequest};
use accord::engine::{CompiledCampaign, Engine};
use accord::store::memory::MemoryStore;
use accord::store::CampaignStore;
use accord::ManualClock;
use criterion::{BenchmarkId, Criterion};

#[path = "workload/mod.rs"]
mod workload;

use workload::{now, time_each, Workload};

fn engine(w: &Workload) -> Engine {
    Engine::new(
        w.campaigns
            .iter()
            .map(|c| Arc::new(CompiledCampaign::compile(c).expect("generated campaigns compile"))),
    )
}

/// A service over a memory store holding the workload's campaigns, its
/// clock at [`now`], its snapshot compiled.
fn service(w: &Workload) -> CampaignService<MemoryStore> {
    let store = MemoryStore::new();
    for c in &w.campaigns {
        pollster::block_on(store.insert_campaign(c)).expect("insert");
    }
    let service = CampaignService::new(Arc::new(store), Arc::new(ManualClock::new(now())));
    service_search(&service, &w.requests[0]);
    service
}

fn service_search(s: &CampaignService<MemoryStore>, r: &SearchRequest) -> usize {
    let project = "bench";
    pollster::block_on(s.search(project, r, &SearchOptions::default()))
        .expect("search")
        .actions
        .len()
}

/// One step of a search, by name; `s`: the service, for the `service` step.
fn step(e: &Engine, s: Option<&CampaignService<MemoryStore>>, step: &str, r: &SearchRequest) {
    match step {
        "match" => {
            black_box(e.matches(r, now()).expect("match").len());
        }
        "search" => {
            black_box(e.search(r, now(), false).expect("search"));
        }
        _ => {
            black_box(service_search(s.expect("a service"), r));
        }
    }
}

/// Runs `name` over every request of `w`, `rounds` times: the part
/// callgrind counts.
#[inline(never)]
fn drive(
    e: &Engine,
    s: Option<&CampaignService<MemoryStore>>,
    name: &str,
    w: &Workload,
    rounds: usize,
) {
    for _ in 0..rounds {
        for r in &w.requests {
            step(e, s, name, r);
        }
    }
}

/// Average fraction of campaigns that fire per request.
fn match_rate(e: &Engine, w: &Workload) -> f64 {
    let hits: usize = w
        .requests
        .iter()
        .map(|r| e.search(r, now(), false).expect("search").hits.len())
        .sum();
    #[allow(clippy::cast_precision_loss)]
    let rate = hits as f64 / (w.requests.len() * w.campaigns.len()) as f64;
    rate
}

fn bench(c: &mut Criterion, w: &Workload, samples: usize, rounds: usize) {
    let e = engine(w);
    let rate = match_rate(&e, w);
    let line = |step: &str, stats: &workload::Stats| {
        println!(
            "{:<14} {:<6} campaigns {:>6}  requests {:>4}  match rate {:>7} (designed {:>6})  median {:>8.2} µs  p99 {:>8.2} µs  mean {:>8.2} µs  {:>9.0} searches/s on one core",
            w.name,
            step,
            w.campaigns.len(),
            w.requests.len(),
            format!("{:.3}%", rate * 100.0),
            workload::pct(w.target_rate),
            stats.median,
            stats.p99,
            stats.mean,
            stats.per_second()
        );
    };
    let svc = service(w);
    for name in ["match", "search", "service"] {
        let stats = time_each(&w.requests, rounds, |r| step(&e, Some(&svc), name, r));
        line(name, &stats);
    }
    for name in ["match", "search", "service"] {
        let mut g = c.benchmark_group(name);
        g.sample_size(samples)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3));
        let mut i = 0usize;
        g.bench_function(BenchmarkId::from_parameter(&w.name), |b| {
            b.iter(|| {
                let r = &w.requests[i % w.requests.len()];
                i += 1;
                step(&e, Some(&svc), name, r);
            });
        });
        g.finish();
    }
}

/// The workloads, by name, built only when `keep` accepts the name.
fn workloads(keep: &dyn Fn(&str) -> bool) -> Vec<(Workload, usize, usize)> {
    let seed = 42;
    let mut out = Vec::new();
    let mut add = |name: &str, make: &dyn Fn() -> Workload, samples, rounds| {
        if keep(name) {
            out.push((make(), samples, rounds));
        }
    };
    add("storefront", &|| workload::storefront(seed), 50, 20);
    add("regex-heavy", &|| workload::regex_heavy(seed), 50, 20);
    add("marketplace", &|| workload::marketplace(seed), 30, 4);
    add(
        "storefront-20000",
        &|| workload::storefront_sized(seed, 20_000, 0.018),
        20,
        3,
    );
    for rate in [0.0001, 0.001, 0.01, 0.1] {
        add(
            &format!("scale-{}", workload::pct(rate)),
            &|| workload::scale(seed, 100_000, rate),
            10,
            3,
        );
    }
    out
}

fn main() {
    if let Ok(spec) = std::env::var("ACCORD_BENCH_DRIVE") {
        let mut parts = spec.splitn(4, ':');
        let (name, workload, rounds) = (
            parts.next().expect("STEP"),
            parts.next().expect("WORKLOAD"),
            parts.next().and_then(|n| n.parse().ok()).expect("N"),
        );
        let (mut w, _, _) = workloads(&|n| n == workload)
            .pop()
            .expect("a workload of that name");
        if let Some(r) = parts.next() {
            w.requests
                .truncate(r.parse().expect("R, a number of requests"));
        }
        let e = engine(&w);
        // Only the service step needs the store filled (slow under callgrind
        // for large workloads).
        let svc = (name == "service").then(|| service(&w));
        drive(&e, svc.as_ref(), name, &w, rounds);
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    // `cargo bench --bench search -- NAME` runs the workloads whose name contains NAME.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let filter = filter.as_deref();
    for (w, samples, rounds) in workloads(&|n| filter.is_none_or(|f| n.contains(f))) {
        bench(&mut c, &w, samples, rounds);
    }
    c.final_summary();
}
