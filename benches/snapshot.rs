//! Snapshot build time and memory per campaign.
//!
//! Memory is measured, not estimated: a counting global allocator records
//! the bytes live before and after building the snapshot (and, separately,
//! after compiling the campaigns), so the figure includes every map, list,
//! regex and posting the engine keeps.
//!
//! `cargo bench --bench snapshot`
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

use workload::Workload;

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

fn compile(w: &Workload) -> Vec<Arc<CompiledCampaign>> {
    w.campaigns
        .iter()
        .map(|c| Arc::new(CompiledCampaign::compile(c).expect("generated campaigns compile")))
        .collect()
}

#[allow(clippy::cast_precision_loss)]
fn report(w: &Workload) {
    let n = w.campaigns.len();
    let before = live();
    let t = Instant::now();
    let compiled = compile(w);
    let compile_time = t.elapsed();
    let after_compile = live();
    let t = Instant::now();
    let engine = Engine::new(compiled.iter().cloned());
    let index_time = t.elapsed();
    let after_engine = live();
    let per = |bytes: isize| bytes as f64 / n as f64;
    println!(
        "{:<14} {:>6} campaigns  compile {:>8.1} ms  snapshot (order, plans, index) {:>8.1} ms  \
         memory per campaign: compiled {:>7.0} B (campaign record, compiled conditions, regexes) + \
         snapshot {:>6.0} B (plans, index) = {:>7.0} B",
        w.name,
        n,
        compile_time.as_secs_f64() * 1e3,
        index_time.as_secs_f64() * 1e3,
        per(after_compile - before),
        per(after_engine - after_compile),
        per(after_engine - before),
    );
    drop(engine);
    drop(compiled);
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let seed = 42;
    let workloads = [
        workload::storefront(seed),
        workload::marketplace(seed),
        workload::scale(seed, 100_000, 0.01),
    ];
    for w in &workloads {
        if filter.as_deref().is_some_and(|f| !w.name.contains(f)) {
            continue;
        }
        report(w);
        let compiled = compile(w);
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
            b.iter(|| black_box(Engine::new(compile(w))));
        });
        g.finish();
    }
    c.final_summary();
}
