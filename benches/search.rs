//! Search latency per workload: criterion's median, plus our own timing loop
//! over every request for p99 and searches per second on one core.
//!
//! Two rows per workload: `match` is [`Engine::matches`], which campaigns
//! fire (what the peer engines compute); `search` is the whole search,
//! [`Engine::search`], with every fired benefit evaluated and every quota
//! key built.
//!
//! `cargo bench --bench search` (add `-- storefront` to run one workload).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use accord::engine::{CompiledCampaign, Engine};
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

fn bench(c: &mut Criterion, w: &Workload, samples: usize, rounds: usize, filter: Option<&str>) {
    if filter.is_some_and(|f| !w.name.contains(f)) {
        return;
    }
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
    let matched = time_each(&w.requests, rounds, |r| {
        black_box(e.matches(r, now()).expect("match").len());
    });
    line("match", &matched);
    let searched = time_each(&w.requests, rounds, |r| {
        black_box(e.search(r, now(), false).expect("search"));
    });
    line("search", &searched);
    for step in ["match", "search"] {
        let mut g = c.benchmark_group(step);
        g.sample_size(samples)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3));
        let mut i = 0usize;
        g.bench_function(BenchmarkId::from_parameter(&w.name), |b| {
            b.iter(|| {
                let r = &w.requests[i % w.requests.len()];
                i += 1;
                if step == "match" {
                    black_box(e.matches(r, now()).expect("match").len());
                } else {
                    black_box(e.search(r, now(), false).expect("search"));
                }
            });
        });
        g.finish();
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    // `cargo bench --bench search -- NAME` runs the workloads whose name contains NAME.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let filter = filter.as_deref();
    let seed = 42;
    bench(&mut c, &workload::storefront(seed), 50, 20, filter);
    bench(&mut c, &workload::regex_heavy(seed), 50, 20, filter);
    bench(&mut c, &workload::marketplace(seed), 30, 4, filter);
    for rate in [0.0001, 0.001, 0.01, 0.1] {
        bench(&mut c, &workload::scale(seed, 100_000, rate), 10, 3, filter);
    }
    c.final_summary();
}
