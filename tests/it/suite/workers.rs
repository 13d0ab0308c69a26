//! Separate OS processes, for guarantees that must hold across processes.
//!
//! Mechanism: a runner file has an `#[ignore]`d worker test (it never runs in
//! a normal `cargo test`). The parent test re-executes its own test binary
//! (`std::env::current_exe()`) once per worker with
//! `<worker> --exact --ignored --nocapture --test-threads=1` and a [`Job`]
//! as JSON in the environment variable [`JOB_ENV`]. Each worker opens its
//! own store on the same database, announces that it is ready (a file in a
//! shared directory), waits until every worker is ready, runs its share of
//! redeems, and prints one line starting with [`RESULT_MARK`]. The parent
//! reads the lines, checks that the workers' redeem windows overlapped (so
//! they really competed), and sums.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::campaign_store::{redeem_concurrently, Store, Tally};
use accord::store::CampaignStore;

/// The environment variable carrying a worker's job.
pub const JOB_ENV: &str = "ACCORD_SUITE_WORKER_JOB";

/// The start of a worker's result line.
pub const RESULT_MARK: &str = "ACCORD-SUITE-WORKER-RESULT";

/// What one worker process does.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    /// Where the store is (a SQLite path, a PostgreSQL URL).
    pub store: String,
    /// The PostgreSQL schema, when the runner isolates itself in one.
    pub schema: Option<String>,
    /// The project of the campaign.
    pub project: String,
    /// The campaign to redeem.
    pub campaign: Uuid,
    /// How many redeems this worker runs (all at once).
    pub redeems: usize,
    /// The shared quota's limit.
    pub limit: String,
    /// Prefix of the idempotency keys, distinct per worker.
    pub tag: String,
    /// The directory of the start barrier.
    pub barrier: PathBuf,
    /// How many workers the barrier waits for.
    pub workers: usize,
}

impl Job {
    /// The job of this process, when it was started as a worker.
    pub fn from_env() -> Option<Job> {
        let json = std::env::var(JOB_ENV).ok()?;
        Some(serde_json::from_str(&json).expect("worker job JSON"))
    }
}

/// What a worker reports: its tally and the window of its redeems
/// (microseconds since the epoch).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Report {
    pub recorded: usize,
    pub exceeded: usize,
    pub replayed: usize,
    pub started: u128,
    pub finished: u128,
}

fn now_micros() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros()
}

/// Waits until `workers` files are in `dir`, after adding ours.
fn barrier(dir: &std::path::Path, workers: usize) {
    std::fs::write(dir.join(format!("ready-{}", std::process::id())), b"").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_dir(dir).unwrap().count() < workers {
        assert!(Instant::now() < deadline, "the other workers never started");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The worker side: runs `job` on `store` and prints the result line.
pub async fn run_worker<S: Store>(store: Arc<S>, job: &Job) {
    let c = store
        .campaign(&job.project, job.campaign)
        .await
        .unwrap()
        .expect("the parent stored the campaign");
    let (dir, workers) = (job.barrier.clone(), job.workers);
    tokio::task::spawn_blocking(move || barrier(&dir, workers))
        .await
        .unwrap();
    let started = now_micros();
    let Tally {
        recorded,
        exceeded,
        replayed,
    } = redeem_concurrently(store, &c, job.redeems, &job.limit, &job.tag).await;
    let report = Report {
        recorded,
        exceeded,
        replayed,
        started,
        finished: now_micros(),
    };
    // On a line of its own: libtest has already printed "test … ... ".
    println!(
        "\n{RESULT_MARK} {}",
        serde_json::to_string(&report).unwrap()
    );
}

/// The parent side: runs each job in a child process executing the worker
/// test `worker_test` of this binary; returns their reports, after checking
/// that every worker succeeded and that their redeem windows overlapped.
pub async fn spawn_workers(worker_test: &'static str, jobs: Vec<Job>) -> Vec<Report> {
    tokio::task::spawn_blocking(move || {
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = jobs
            .iter()
            .map(|job| {
                Command::new(&exe)
                    .args([worker_test, "--exact", "--ignored", "--nocapture"])
                    .arg("--test-threads=1")
                    .env(JOB_ENV, serde_json::to_string(job).unwrap())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn a worker process")
            })
            .collect();
        let reports: Vec<Report> = children
            .into_iter()
            .map(|child| {
                let out = child.wait_with_output().unwrap();
                let stdout = String::from_utf8_lossy(&out.stdout);
                assert!(
                    out.status.success(),
                    "worker failed: {}\n{stdout}\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
                let line = stdout
                    .lines()
                    .find_map(|l| l.split_once(RESULT_MARK).map(|(_, rest)| rest))
                    .unwrap_or_else(|| panic!("no result line in worker output:\n{stdout}"));
                serde_json::from_str(line.trim()).unwrap()
            })
            .collect();
        let last_start = reports.iter().map(|r| r.started).max().unwrap();
        let first_end = reports.iter().map(|r| r.finished).min().unwrap();
        assert!(
            last_start < first_end,
            "the workers did not run at the same time: {reports:?}"
        );
        reports
    })
    .await
    .unwrap()
}

/// The jobs of a two-process shared-quota run: `total` redeems split
/// between two workers, against a quota of `limit`.
pub fn two_jobs(
    store: &str,
    schema: Option<&str>,
    campaign: &accord::campaign::Campaign,
    total: usize,
    limit: &str,
    barrier: &std::path::Path,
) -> Vec<Job> {
    (0..2)
        .map(|i| Job {
            store: store.to_owned(),
            schema: schema.map(str::to_owned),
            project: campaign.project_id.clone(),
            campaign: campaign.id,
            redeems: total / 2 + if i == 0 { total % 2 } else { 0 },
            limit: limit.to_owned(),
            tag: format!("process-{i}"),
            barrier: barrier.to_owned(),
            workers: 2,
        })
        .collect()
}
