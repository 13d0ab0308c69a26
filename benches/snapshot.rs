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
//! criterion iterations). At that size the campaigns are generated and
//! compiled one at a time, each input dropped once compiled (holding all
//! the generated inputs at once would take about 13 GB), so the memory
//! measured is the compiled campaigns and the snapshot. The compile time
//! reported, at every size, is the time spent in compiling alone, not in
//! generating the inputs.
#![allow(unsafe_code)] // the counting allocator; the library itself forbids unsafe code

use std::alloc::{GlobalAlloc, Layout, System};
use std::borrow::Borrow;
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use accord::campaign::{Campaign, SearchRequest};
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

/// Compiles campaigns in turn, keeping the compiled ones only (an owned
/// input is dropped once compiled); also returns the time spent compiling,
/// which leaves out producing the inputs.
fn compile_timed<C: Borrow<Campaign>>(
    campaigns: impl ExactSizeIterator<Item = C>,
) -> (Vec<Arc<CompiledCampaign>>, Duration) {
    let mut compiled = Vec::with_capacity(campaigns.len());
    let mut spent = Duration::ZERO;
    for c in campaigns {
        let t = Instant::now();
        let one = CompiledCampaign::compile(c.borrow()).expect("generated campaigns compile");
        compiled.push(Arc::new(one));
        spent += t.elapsed();
    }
    (compiled, spent)
}

/// Prints a workload's report lines: its campaigns (borrowed from a
/// workload, or generated one at a time) are compiled and indexed under
/// the counting allocator, then its requests are matched and searched.
#[allow(clippy::cast_precision_loss)]
fn report<C: Borrow<Campaign>>(
    name: &str,
    campaigns: impl ExactSizeIterator<Item = C>,
    requests: &[SearchRequest],
    rounds: usize,
) {
    let n = campaigns.len();
    let before = live();
    let rss_before = rss();
    let (compiled, compile_time) = compile_timed(campaigns);
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
        name,
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
    let hits: usize = requests
        .iter()
        .map(|r| engine.search(r, now(), false).expect("search").hits.len())
        .sum();
    let matching = time_each(requests, rounds, |r| {
        black_box(engine.matches(r, now()).expect("match").len());
    });
    let search = time_each(requests, rounds, |r| {
        black_box(engine.search(r, now(), false).expect("search"));
    });
    println!(
        "{:<14} {:>7} campaigns  {:>8.1} hits a request  match median {:>9.1} µs p99 {:>9.1} µs  \
         search median {:>9.1} µs p99 {:>9.1} µs  ({} requests × {rounds})",
        name,
        n,
        hits as f64 / requests.len() as f64,
        matching.median,
        matching.p99,
        search.median,
        search.p99,
        requests.len(),
    );
    drop(engine);
    drop(compiled);
}

/// A workload of the bench: name, how to build it, and the timing rounds
/// of its searches.
type Entry = (&'static str, Box<dyn Fn() -> Workload>, usize);

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wants = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    let seed = 42;
    let workloads: Vec<Entry> = vec![
        (
            "storefront",
            Box::new(move || workload::storefront(seed)),
            3,
        ),
        (
            "marketplace",
            Box::new(move || workload::marketplace(seed)),
            2,
        ),
        (
            "scale-100000",
            Box::new(move || workload::scale(seed, 100_000, 0.01)),
            2,
        ),
    ];
    for (name, make, rounds) in &workloads {
        if !wants(name) {
            continue;
        }
        let w = make();
        report(&w.name, w.campaigns.iter(), &w.requests, *rounds);
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
    if filter.as_deref().is_some_and(|f| f.contains("1000000")) {
        // Generated and compiled one campaign at a time: only the compiled
        // campaigns are held, never all the inputs.
        let (w, campaigns) = workload::scale_stream(seed, 1_000_000, 0.01);
        report(&w.name, campaigns, &w.requests, 1);
    }
    c.final_summary();
}
