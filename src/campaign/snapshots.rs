//! Per-project engine snapshots, swapped atomically.
//!
//! Searches load the current snapshot of their project with one atomic read
//! (`arc-swap`) and keep it for the whole search, so saving a campaign never
//! stalls or disturbs a search in flight. A snapshot is rebuilt when the
//! store's catalog version of the project moved: at once after a write made
//! through this service, and within [`DEFAULT_REFRESH`] after a write made by
//! another process sharing the database.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use crate::engine::{CompiledCampaign, Engine};
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

#[derive(Debug)]
struct Slot {
    snapshot: ArcSwap<Snapshot>,
    /// Milliseconds since `Snapshots::epoch` of the last version check;
    /// 0 forces a check.
    checked: AtomicU64,
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

    fn slot(&self, project: &str) -> Option<Arc<Slot>> {
        self.slots
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(project)
            .cloned()
    }

    /// Forces the next `get` of `project` to check the catalog version.
    pub(crate) fn invalidate(&self, project: &str) {
        if let Some(slot) = self.slot(project) {
            slot.checked.store(0, Ordering::Release);
        }
    }

    /// The current snapshot of `project`, rebuilt if the catalog changed.
    pub(crate) async fn get<S: CampaignStore>(
        &self,
        store: &S,
        project: &str,
    ) -> Result<Arc<Snapshot>> {
        let now = self.elapsed_ms();
        let refresh = u64::try_from(self.refresh.as_millis()).unwrap_or(u64::MAX);
        let slot = self.slot(project);
        if let Some(slot) = &slot {
            let checked = slot.checked.load(Ordering::Acquire);
            if checked != 0 && now.saturating_sub(checked) < refresh {
                return Ok(slot.snapshot.load_full());
            }
        }
        // Read the version before the campaigns: the snapshot is then at
        // least as new as its label, and a write in between only causes one
        // extra rebuild later, never a missed one.
        let version = store.catalog_version(project).await?;
        if let Some(slot) = &slot {
            let current = slot.snapshot.load_full();
            if current.version == version {
                slot.checked.store(now, Ordering::Release);
                return Ok(current);
            }
        }
        let campaigns = store.all_campaigns(project).await?;
        let previous = slot.as_ref().map(|s| s.snapshot.load_full());
        let engine = Engine::new(campaigns.into_iter().filter_map(|c| {
            // Reuse what is unchanged: same id and version compile the same.
            if let Some(prev) = previous
                .as_ref()
                .and_then(|p| p.engine.by_code(&c.ref_code))
            {
                if prev.campaign.id == c.id && prev.campaign.version == c.version {
                    return Some(Arc::clone(prev));
                }
            }
            // A stored campaign passed this compilation when it was saved.
            CompiledCampaign::compile(&c).ok().map(Arc::new)
        }));
        let snapshot = Arc::new(Snapshot { version, engine });
        let slot = slot.unwrap_or_else(|| {
            let mut slots = self
                .slots
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(slots.entry(project.to_owned()).or_insert_with(|| {
                Arc::new(Slot {
                    snapshot: ArcSwap::from_pointee(Snapshot::default()),
                    checked: AtomicU64::new(0),
                })
            }))
        });
        // Two rebuilds may race; never replace a newer snapshot with an older one.
        slot.snapshot.rcu(|current| {
            if current.version > snapshot.version {
                Arc::clone(current)
            } else {
                Arc::clone(&snapshot)
            }
        });
        slot.checked.store(now, Ordering::Release);
        Ok(slot.snapshot.load_full())
    }
}
