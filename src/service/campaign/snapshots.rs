//! Per-project engine snapshots, swapped atomically, rebuilt single-flight.
//!
//! Searches load the current snapshot of their project with one atomic read
//! (`arc-swap`) and keep it for the whole search, so saving a campaign never
//! stalls or disturbs a search in flight. A snapshot is rebuilt when the
//! store's catalog version of the project moved: at once after a write made
//! through this service, and within [`DEFAULT_REFRESH`] after a write made by
//! another process sharing the database.
//!
//! One search at a time per project checks the catalog version and, if it
//! moved, loads the campaigns and builds the new snapshot (the *flight*).
//! Meanwhile the other searches are served from the previous snapshot —
//! except those that must see a write made through this service
//! ([`Snapshots::invalidate`]): they wait for a flight that started after
//! that write. So a burst of searches after a catalog change loads the
//! catalog once, not once per search. The compilation runs off the async
//! worker threads (`tokio::task::spawn_blocking`) when a Tokio runtime is
//! running, so a large catalog does not stall the other requests of that
//! worker; elsewhere (a sync host's `block_on`) it runs in place.

use std::collections::HashMap;
use std::future::poll_fn;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use chrono_tz::Tz;

use crate::core::campaign::model::Campaign;
use crate::core::engine::{CompiledCampaign, Engine};
use crate::store::CampaignStore;
use crate::Result;

/// How long a snapshot is trusted before the store's catalog version is
/// checked again.
pub const DEFAULT_REFRESH: Duration = Duration::from_millis(500);

/// A compiled snapshot and the catalog version it was built from.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    pub(crate) version: i64,
    pub(crate) engine: Engine,
}

/// One rebuild at a time: the leader holds the flight; the others may wait
/// for it to land. Runtime-agnostic (the services run under any executor,
/// or none).
#[derive(Debug, Default)]
struct Flight {
    state: Mutex<FlightState>,
}

#[derive(Debug, Default)]
struct FlightState {
    flying: bool,
    waiting: Vec<Waker>,
}

/// The leader's hold on a [`Flight`]; dropping it (done, failed, or the
/// search cancelled) lands the flight and wakes the waiters.
struct Leader<'f>(&'f Flight);

impl Flight {
    fn state(&self) -> MutexGuard<'_, FlightState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn try_lead(&self) -> Option<Leader<'_>> {
        let mut state = self.state();
        if state.flying {
            return None;
        }
        state.flying = true;
        Some(Leader(self))
    }

    /// Ready once no flight is under way.
    async fn landed(&self) {
        poll_fn(|cx| {
            let mut state = self.state();
            if state.flying {
                state.waiting.push(cx.waker().clone());
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await;
    }
}

impl Drop for Leader<'_> {
    fn drop(&mut self) {
        let waiting = {
            let mut state = self.0.state();
            state.flying = false;
            std::mem::take(&mut state.waiting)
        };
        for w in waiting {
            w.wake();
        }
    }
}

#[derive(Debug)]
struct Slot {
    snapshot: ArcSwap<Snapshot>,
    /// Milliseconds since `Snapshots::epoch` of the last version check.
    checked: AtomicU64,
    /// Bumped by every write through this service ([`Snapshots::invalidate`]).
    written: AtomicU64,
    /// The value of `written` before the last check: the snapshot holds
    /// every write through this service up to it.
    holds: AtomicU64,
    flight: Flight,
    /// The error of the last flight, if it failed: shared with the searches
    /// that waited for it, so that while the store is down they fail
    /// together instead of each trying in turn.
    failure: Mutex<Option<crate::Error>>,
}

#[derive(Debug)]
pub(crate) struct Snapshots {
    slots: RwLock<HashMap<String, Arc<Slot>>>,
    refresh: Duration,
    epoch: Instant,
}

impl Snapshots {
    pub(crate) fn new(refresh: Duration) -> Self {
        Snapshots {
            slots: RwLock::new(HashMap::new()),
            refresh,
            epoch: Instant::now(),
        }
    }

    fn elapsed_ms(&self) -> u64 {
        // +1 so that a check at the very start is not mistaken for "never".
        u64::try_from(self.epoch.elapsed().as_millis())
            .unwrap_or(u64::MAX)
            .saturating_add(1)
    }

    fn slot(&self, project: &str) -> Arc<Slot> {
        if let Some(slot) = self
            .slots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(project)
        {
            return Arc::clone(slot);
        }
        let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(slots.entry(project.to_owned()).or_insert_with(|| {
            Arc::new(Slot {
                // Never built: no catalog version is this one.
                snapshot: ArcSwap::from_pointee(Snapshot {
                    version: i64::MIN,
                    engine: Engine::default(),
                }),
                checked: AtomicU64::new(0),
                // A first search waits for the first build.
                written: AtomicU64::new(1),
                holds: AtomicU64::new(0),
                flight: Flight::default(),
                failure: Mutex::new(None),
            })
        }))
    }

    /// The snapshot of `project` as it is now, without asking the store
    /// whether it is current (none before the project's first build). For
    /// redeem, which checks the campaign's version against the store's.
    pub(crate) fn peek(&self, project: &str) -> Option<Arc<Snapshot>> {
        self.slots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(project)
            .map(|slot| slot.snapshot.load_full())
    }

    /// A write to `project`'s catalog went through this service: the next
    /// searches must see it.
    pub(crate) fn invalidate(&self, project: &str) {
        if let Some(slot) = self
            .slots
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(project)
        {
            slot.written.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The current snapshot of `project`, rebuilt if the catalog changed.
    pub(crate) async fn get<S: CampaignStore>(
        &self,
        store: &S,
        project: &str,
        zone: Tz,
    ) -> Result<Arc<Snapshot>> {
        let refresh = u64::try_from(self.refresh.as_millis()).unwrap_or(u64::MAX);
        let slot = self.slot(project);
        loop {
            // Holds every write made through this service so far?
            let holds_writes =
                slot.holds.load(Ordering::Acquire) >= slot.written.load(Ordering::Acquire);
            let checked = slot.checked.load(Ordering::Acquire);
            if holds_writes && checked != 0 && self.elapsed_ms().saturating_sub(checked) < refresh {
                return Ok(slot.snapshot.load_full());
            }
            if let Some(_leader) = slot.flight.try_lead() {
                *lock(&slot.failure) = None;
                let checked = self.check(store, project, &slot, zone).await;
                if let Err(e) = &checked {
                    *lock(&slot.failure) = Some(e.clone());
                }
                return checked;
            }
            if holds_writes {
                // Only due for a check, which another search is making:
                // the previous snapshot serves meanwhile.
                return Ok(slot.snapshot.load_full());
            }
            slot.flight.landed().await;
            if let Some(e) = lock(&slot.failure).as_ref() {
                return Err(e.clone());
            }
        }
    }

    /// The flight: checks the catalog version, rebuilds if it moved.
    async fn check<S: CampaignStore>(
        &self,
        store: &S,
        project: &str,
        slot: &Slot,
        zone: Tz,
    ) -> Result<Arc<Snapshot>> {
        let now = self.elapsed_ms();
        // Read before the store: the snapshot then holds every write made
        // through this service up to this value.
        let written = slot.written.load(Ordering::Acquire);
        // Read the version before the campaigns: the snapshot is then at
        // least as new as its label, and a write in between only causes one
        // extra rebuild later, never a missed one.
        let version = store.catalog_version(project).await?;
        let current = slot.snapshot.load_full();
        if current.version != version {
            let campaigns = store.all_campaigns(project).await?;
            let engine = build_off_worker(campaigns, current, zone).await?;
            slot.snapshot.store(Arc::new(Snapshot { version, engine }));
        }
        slot.holds.fetch_max(written, Ordering::AcqRel);
        slot.checked.store(now, Ordering::Release);
        Ok(slot.snapshot.load_full())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Compiles `campaigns` into an engine, reusing what `previous` compiled of
/// the same id and version.
fn build(campaigns: Vec<Campaign>, previous: &Snapshot, zone: Tz) -> Engine {
    Engine::new(campaigns.into_iter().filter_map(|c| {
        // Reuse what is unchanged: same id and version compile the same.
        if let Some(prev) = previous.engine.by_code(&c.ref_code) {
            if prev.campaign.id == c.id && prev.campaign.version == c.version {
                return Some(Arc::clone(prev));
            }
        }
        // A stored campaign passed this compilation when it was saved.
        CompiledCampaign::compile(&c)
            .ok()
            .map(|cc| Arc::new(cc.in_zone(zone)))
    }))
}

/// [`build`] on Tokio's blocking threads when a Tokio runtime runs this
/// task; in place otherwise.
async fn build_off_worker(
    campaigns: Vec<Campaign>,
    previous: Arc<Snapshot>,
    zone: Tz,
) -> Result<Engine> {
    #[cfg(any(feature = "sqlite", feature = "postgres", feature = "http"))]
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        return match runtime
            .spawn_blocking(move || build(campaigns, &previous, zone))
            .await
        {
            Ok(engine) => Ok(engine),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(crate::Error::unavailable(
                "the runtime is shutting down: the catalog was not rebuilt",
            )),
        };
    }
    Ok(build(campaigns, &previous, zone))
}

#[cfg(all(test, feature = "memory"))]
// Helpers of the tests unwrap like the tests do.
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::Ordering;

    use serde_json::json;

    use super::*;
    use crate::core::campaign::{CampaignInput, SearchRequest};
    use crate::core::clock::SystemClock;
    use crate::service::campaign::{CampaignService, SearchOptions};
    use crate::testkit::counting::Counting;

    fn input(name: &str) -> CampaignInput {
        serde_json::from_value(json!({
            "name": name, "refCode": "C1",
            "startDate": "2020-01-01T00:00:00Z", "endDate": "2100-01-01T00:00:00Z",
            "rules": [{"name": "r", "when": [], "thenOperator": "AND",
                       "then": [{"action": "DISCOUNT", "data": []}]}]
        }))
        .unwrap()
    }

    /// The campaign names a search finds.
    async fn names(service: &CampaignService<Counting>) -> Vec<String> {
        let found = service
            .search("p", &SearchRequest::default(), &SearchOptions::default())
            .await
            .unwrap();
        found
            .actions
            .iter()
            .map(|a| a.campaign.name.clone())
            .collect()
    }

    fn loads(store: &Counting) -> usize {
        Counting::count(&store.all_campaigns)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn searches_after_a_local_write_wait_for_one_rebuild_and_see_it() {
        let store = Arc::new(Counting::default());
        let service = Arc::new(
            CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
                .with_refresh_interval(Duration::from_secs(3600)),
        );
        let c = service
            .create_campaign("p", input("v1"), "t")
            .await
            .unwrap();
        assert_eq!(names(&service).await, ["v1"]);
        assert_eq!(loads(&store), 1);
        store.load_delay_ms.store(200, Ordering::SeqCst);
        service
            .update_campaign("p", c.id, input("v2"), "t")
            .await
            .unwrap();
        let searches: Vec<_> = (0..16)
            .map(|_| {
                let service = Arc::clone(&service);
                tokio::spawn(async move { names(&service).await })
            })
            .collect();
        for s in searches {
            assert_eq!(s.await.unwrap(), ["v2"], "a search missed the local write");
        }
        assert_eq!(loads(&store), 2, "the catalog was loaded more than once");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn during_a_refresh_other_searches_are_served_the_previous_snapshot() {
        let store = Arc::new(Counting::default());
        let refresh = Duration::from_millis(50);
        // `writer` stands for another process sharing the database.
        let writer = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock));
        let reader = Arc::new(
            CampaignService::new(Arc::clone(&store), Arc::new(SystemClock))
                .with_refresh_interval(refresh),
        );
        let c = writer.create_campaign("p", input("v1"), "t").await.unwrap();
        assert_eq!(names(&reader).await, ["v1"]);
        let before = loads(&store);
        writer
            .update_campaign("p", c.id, input("v2"), "t")
            .await
            .unwrap();
        tokio::time::sleep(refresh * 2).await;
        store.load_delay_ms.store(1000, Ordering::SeqCst);
        let leader = {
            let reader = Arc::clone(&reader);
            tokio::spawn(async move { names(&reader).await })
        };
        // Let the leader take the flight and reach the slow load.
        while loads(&store) == before {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let start = Instant::now();
        for _ in 0..8 {
            assert_eq!(names(&reader).await, ["v1"], "not the previous snapshot");
        }
        assert!(
            start.elapsed() < Duration::from_millis(500),
            "the searches waited for the rebuild: {:?}",
            start.elapsed()
        );
        assert_eq!(leader.await.unwrap(), ["v2"]);
        assert_eq!(names(&reader).await, ["v2"]);
        assert_eq!(loads(&store), before + 1, "more than one rebuild");
    }

    /// A service over a counting store, with campaign `v1` in project `p`.
    async fn service_with_v1() -> (Arc<Counting>, Arc<CampaignService<Counting>>) {
        let store = Arc::new(Counting::default());
        let service = Arc::new(CampaignService::new(
            Arc::clone(&store),
            Arc::new(SystemClock),
        ));
        service
            .create_campaign("p", input("v1"), "t")
            .await
            .unwrap();
        (store, service)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn searches_waiting_for_a_failed_rebuild_fail_with_it_not_in_turn() {
        let (store, service) = service_with_v1().await;
        store.load_delay_ms.store(300, Ordering::SeqCst);
        store.loads_fail.store(true, Ordering::SeqCst);
        let start = Instant::now();
        let searches: Vec<_> = (0..8)
            .map(|_| {
                let service = Arc::clone(&service);
                tokio::spawn(async move {
                    service
                        .search("p", &SearchRequest::default(), &SearchOptions::default())
                        .await
                })
            })
            .collect();
        for s in searches {
            let err = s.await.unwrap().unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::Unavailable);
        }
        assert_eq!(loads(&store), 1, "the waiters tried again in turn");
        assert!(
            start.elapsed() < Duration::from_millis(1500),
            "{:?}",
            start.elapsed()
        );
        // The database is back: the next search rebuilds.
        store.loads_fail.store(false, Ordering::SeqCst);
        store.load_delay_ms.store(0, Ordering::SeqCst);
        assert_eq!(names(&service).await, ["v1"]);
    }

    #[test]
    fn a_sync_host_builds_in_place() {
        // No Tokio runtime: pollster drives the service, the build runs in place.
        let store = Arc::new(Counting::default());
        let service = CampaignService::new(Arc::clone(&store), Arc::new(SystemClock));
        pollster::block_on(service.create_campaign("p", input("v1"), "t")).unwrap();
        assert_eq!(pollster::block_on(names(&service)), ["v1"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancelled_leader_lands_the_flight() {
        let (store, service) = service_with_v1().await;
        store.load_delay_ms.store(10_000, Ordering::SeqCst);
        let stuck = {
            let service = Arc::clone(&service);
            tokio::spawn(async move { names(&service).await })
        };
        while loads(&store) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        stuck.abort();
        let _ = stuck.await;
        store.load_delay_ms.store(0, Ordering::SeqCst);
        let found = tokio::time::timeout(Duration::from_secs(5), names(&service)).await;
        assert_eq!(found.expect("the flight never landed"), ["v1"]);
    }
}
