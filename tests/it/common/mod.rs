//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use accord::campaign::{CampaignInput, CampaignService, RedeemRequest, SearchRequest};
use accord::store::memory::MemoryStore;
use accord::store::sqlite::SqliteStore;
use accord::ManualClock;
use chrono::{DateTime, TimeZone, Utc};

/// 2026-06-15T10:00:00Z, a Monday inside every fixture's period.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 15, 10, 0, 0).unwrap()
}

/// A campaign input from `tests/data/campaigns/<name>.json`.
pub fn fixture(name: &str) -> CampaignInput {
    let path = format!(
        "{}/tests/data/campaigns/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn search_req(json: serde_json::Value) -> SearchRequest {
    serde_json::from_value(json).unwrap()
}

pub fn redeem_req(json: serde_json::Value) -> RedeemRequest {
    serde_json::from_value(json).unwrap()
}

pub struct World {
    pub service: CampaignService<MemoryStore>,
    pub clock: Arc<ManualClock>,
}

pub fn world() -> World {
    let clock = Arc::new(ManualClock::new(t0()));
    let service = CampaignService::new(Arc::new(MemoryStore::new()), clock.clone());
    World { service, clock }
}

pub fn run<F: std::future::Future>(f: F) -> F::Output {
    pollster::block_on(f)
}

/// A SQLite store on a new file, `accord.db` in `dir`; the caller keeps
/// `dir` for as long as the store is used.
pub async fn sqlite_in(dir: &tempfile::TempDir) -> SqliteStore {
    SqliteStore::open(dir.path().join("accord.db").to_str().unwrap())
        .await
        .unwrap()
}
