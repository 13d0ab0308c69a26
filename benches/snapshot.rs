//! Snapshot build time, memory per campaign and search latency by size.
//!
//! Memory is measured, not estimated: a counting global allocator records
//! the bytes live before and after building the snapshot (and, separately,
//! after compiling the campaigns), so the figure includes every map, list,
//! regex and posting the engine keeps. The resident set (`VmRSS` of
//! `/proc/self/status`, where there is one) is reported beside it.
//!
//! Each workload's line also times matching and the whole engine search
//! over its requests (median and p99), so that build, memory and search
//! are read at one size in one run.
//!
//! `cargo bench --bench snapshot` runs storefront, marketplace and scale at
//! 100,000 campaigns; `-- scale-1000000` runs the scale workload at
//! 1,000,000 campaigns (a bounded run: one build, the report line, no
//! criterion iterations; the generated campaigns alone take 13 GB).
#![allow(unsafe_code)] // the counting allocator; the library itself forbids unsafe code

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use accord::engine::{CompiledCampaign, Engine};
use criterion::{BenchmarkId, Criterion};

#[path = "workload/mod.rs"]
mod workload;

use workload::{now, time_each, Workload};

/// The system allocator, counting live bytes.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: delegates to `System`; only adds bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size().cast_signed(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size().cast_signed(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size.cast_signed() - layout.size().cast_signed(),
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// The resident set in bytes, where `/proc` tells it.
fn rss() -> Option<isize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: isize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn compile(w: &Workload) -> Vec<Arc<CompiledCampaign>> {
    w.campaigns
        .iter()
        .map(|c| Arc::new(CompiledCampaign::compile(c).expect("generated campaigns compile")))
        .collect()
}

#[allow(clippy::cast_precision_loss)]
fn report(w: &Workload, rounds: usize) {
    let n = w.campaigns.len();
    let before = live();
    let rss_before = rss();
    let t = Instant::now();
    let compiled = compile(w);
    let compile_time = t.elapsed();
    let after_compile = live();
    let t = Instant::now();
    let engine = Engine::new(compiled.iter().cloned());
    let index_time = t.elapsed();
    let after_engine = live();
    let rss_after = rss();
    let per = |bytes: isize| bytes as f64 / n as f64;
    println!(
        "{:<14} {:>7} campaigns  compile {:>8.1} ms  snapshot (order, plans, index) {:>8.1} ms  \
         memory per campaign: compiled {:>7.0} B (campaign record, compiled conditions, regexes) + \
         snapshot {:>6.0} B (plans, index) = {:>7.0} B; resident set grew {} per campaign",
        w.name,
        n,
        compile_time.as_secs_f64() * 1e3,
        index_time.as_secs_f64() * 1e3,
        per(after_compile - before),
        per(after_engine - after_compile),
        per(after_engine - before),
        rss_before.zip(rss_after).map_or_else(
            || "(unknown)".to_owned(),
            |(a, b)| format!("{:.0} B", per(b - a))
        ),
    );
    let hits: usize = w
        .requests
        .iter()
        .map(|r| engine.search(r, now(), false).expect("search").hits.len())
        .sum();
    let matching = time_each(&w.requests, rounds, |r| {
        black_box(engine.matches(r, now()).expect("match").len());
    });
    let search = time_each(&w.requests, rounds, |r| {
        black_box(engine.search(r, now(), false).expect("search"));
    });
    println!(
        "{:<14} {:>7} campaigns  {:>8.1} hits a request  match median {:>9.1} µs p99 {:>9.1} µs  \
         search median {:>9.1} µs p99 {:>9.1} µs  ({} requests × {rounds})",
        w.name,
        n,
        hits as f64 / w.requests.len() as f64,
        matching.median,
        matching.p99,
        search.median,
        search.p99,
        w.requests.len(),
    );
    drop(engine);
    drop(compiled);
}

/// A workload of the bench: name, how to build it, whether criterion
/// iterates its build too, and the timing rounds of its searches.
type Entry = (&'static str, Box<dyn Fn() -> Workload>, bool, usize);

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wants = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    let seed = 42;
    let mut workloads: Vec<Entry> = vec![
        (
            "storefront",
            Box::new(move || workload::storefront(seed)),
            true,
            3,
        ),
        (
            "marketplace",
            Box::new(move || workload::marketplace(seed)),
            true,
            2,
        ),
        (
            "scale-100000",
            Box::new(move || workload::scale(seed, 100_000, 0.01)),
            true,
            2,
        ),
    ];
    if filter.as_deref().is_some_and(|f| f.contains("1000000")) {
        workloads.push((
            "scale-1000000",
            Box::new(move || workload::scale(seed, 1_000_000, 0.01)),
            false,
            1,
        ));
    }
    for (name, make, iterate, rounds) in &workloads {
        if !wants(name) {
            continue;
        }
        let w = make();
        report(&w, *rounds);
        if !iterate {
            continue;
        }
        let compiled = compile(&w);
        let mut g = c.benchmark_group("snapshot");
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_secs(if w.campaigns.len() > 50_000 {
                8
            } else {
                3
            }));
        g.bench_function(BenchmarkId::new("build", &w.name), |b| {
            b.iter(|| black_box(Engine::new(compiled.iter().cloned())));
        });
        g.bench_function(BenchmarkId::new("compile+build", &w.name), |b| {
            b.iter(|| black_box(Engine::new(compile(&w))));
        });
        g.finish();
    }
    c.final_summary();
}
