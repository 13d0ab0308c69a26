//! The quota keys ever charged, per project: what lets search answer a
//! key that was never charged (a new user's per-user key, say) with zero
//! usage without asking the store.
//!
//! Search reads the usage of every key its hits would charge (see
//! `usage.rs`). A key the usage cache does not hold costs a store read,
//! and a storefront whose every search names a new user would pay one per
//! search. Every key that has usage has a record in the store, and records
//! are never removed, so the set of charged keys only grows: this view
//! keeps it (as 64-bit hashes of the keys), brought up to date at most
//! once per refresh interval by asking the store for the keys charged
//! since its last answer
//! ([`RedemptionStore::charged_keys`](crate::store::RedemptionStore::charged_keys)).
//! A key whose hash is not in the view has no usage: zero, no read. A key
//! whose hash is in it (charged, or another key with the same hash) is
//! read as before.
//!
//! What a search sees is what the usage cache already promised:
//!
//! - **read your writes**: a redeem, cancel or hold through this service
//!   adds its keys to the view once the store has written them, before it
//!   returns, so a later search reads them;
//! - **other processes**: a key they charge is in the view after its next
//!   update, within the refresh interval (on PostgreSQL, for a key whose
//!   transaction commits within
//!   [`CHARGED_KEYS_MARGIN`](crate::store::CHARGED_KEYS_MARGIN) of
//!   inserting it; the view is read whole again every
//!   [`REREAD`] to bound even that);
//! - **redeem stays authoritative**: it never reads this view.
//!
//! A project with more than [`MAX_KEYS`] charged keys gets no view (its
//! keys are read as before) until the next whole read.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use crate::store::ChargedKeys;

/// How often a project's view is read whole again rather than brought up
/// to date from its cursor.
pub(crate) const REREAD: Duration = Duration::from_secs(600);

/// Keys a project's view holds at most (about 16 bytes each).
pub(crate) const MAX_KEYS: usize = 4_000_000;

/// The hash a view keeps of a quota key: of the stored key of a usage
/// cache key, the part before its NUL (a rolling counter's window is not
/// part of it). `DefaultHasher::new` hashes alike in every run.
fn hash(cache_key: &str) -> u64 {
    let key = cache_key.split_once('\0').map_or(cache_key, |(key, _)| key);
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

#[derive(Debug, Default)]
struct ProjectView {
    hashes: HashSet<u64>,
    /// What the last answer said to ask with next (`None`: read whole).
    cursor: Option<i64>,
    /// When the last update that was applied began.
    checked_at: Option<Instant>,
    /// When the last whole read began.
    read_whole_at: Option<Instant>,
    /// An update is under way: other searches read usage meanwhile.
    updating: bool,
    /// The project has more keys than a view holds: none until then.
    too_many_until: Option<Instant>,
}

/// An update a search is to make: ask the store with `after`, then hand
/// the answer to [`ChargedView::apply`] (or [`ChargedView::failed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Update {
    pub(crate) after: Option<i64>,
    pub(crate) began: Instant,
}

/// The charged keys of each project, as search uses them.
#[derive(Debug)]
pub(crate) struct ChargedView {
    projects: RwLock<HashMap<String, ProjectView>>,
    ttl: Duration,
}

impl ChargedView {
    /// A view trusted for `ttl` after each update; none with a `ttl` of
    /// zero (every key is read, as the usage cache then does).
    pub(crate) fn new(ttl: Duration) -> Self {
        ChargedView {
            projects: RwLock::new(HashMap::new()),
            ttl,
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, HashMap<String, ProjectView>> {
        self.projects
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<String, ProjectView>> {
        self.projects
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drops from `keys` (usage cache keys) those never charged, when the
    /// view of `project` is fresh; `true` if it was.
    pub(crate) fn retain_charged(&self, project: &str, keys: &mut Vec<String>) -> bool {
        let now = Instant::now();
        let projects = self.read();
        let Some(view) = projects.get(project) else {
            return false;
        };
        if !self.is_fresh(view, now) {
            return false;
        }
        keys.retain(|k| view.hashes.contains(&hash(k)));
        true
    }

    fn is_fresh(&self, view: &ProjectView, now: Instant) -> bool {
        view.too_many_until.is_none()
            && view
                .checked_at
                .is_some_and(|t| now.saturating_duration_since(t) < self.ttl)
    }

    /// The update this search is to make of `project`'s view, if its view
    /// is not fresh and no other search is making one.
    pub(crate) fn claim_update(&self, project: &str) -> Option<Update> {
        if self.ttl.is_zero() {
            return None;
        }
        let now = Instant::now();
        let mut projects = self.write();
        let view = match projects.get_mut(project) {
            Some(view) => view,
            None => projects.entry(project.to_owned()).or_default(),
        };
        if view.updating || self.is_fresh(view, now) {
            return None;
        }
        if view.too_many_until.is_some_and(|until| now < until) {
            return None;
        }
        let whole = view
            .read_whole_at
            .is_none_or(|t| now.saturating_duration_since(t) >= REREAD);
        view.updating = true;
        Some(Update {
            after: if whole { None } else { view.cursor },
            began: now,
        })
    }

    /// Applies the store's answer to `update`. Keys are only ever added:
    /// a key charged since the update began and added by
    /// [`add`](Self::add) stays.
    pub(crate) fn apply(&self, project: &str, update: Update, answer: &ChargedKeys) {
        let mut projects = self.write();
        let Some(view) = projects.get_mut(project) else {
            return;
        };
        view.updating = false;
        view.hashes.extend(answer.keys.iter().map(|k| hash(k)));
        if view.hashes.len() > MAX_KEYS {
            *view = ProjectView {
                too_many_until: Some(update.began + REREAD),
                ..ProjectView::default()
            };
            return;
        }
        view.cursor = Some(answer.cursor);
        view.checked_at = Some(update.began);
        view.too_many_until = None;
        if update.after.is_none() {
            view.read_whole_at = Some(update.began);
        }
    }

    /// The store could not answer `update`: a later search tries again.
    pub(crate) fn failed(&self, project: &str) {
        if let Some(view) = self.write().get_mut(project) {
            view.updating = false;
        }
    }

    /// Adds `keys` (usage cache keys) of `project`: the store has just
    /// charged them (or may have).
    pub(crate) fn add<'k>(&self, project: &str, keys: impl Iterator<Item = &'k str>) {
        if let Some(view) = self.write().get_mut(project) {
            if view.too_many_until.is_none() {
                view.hashes.extend(keys.map(hash));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(list: &[&str]) -> Vec<String> {
        list.iter().map(|k| (*k).to_owned()).collect()
    }

    fn answer(list: &[&str], cursor: i64) -> ChargedKeys {
        ChargedKeys {
            keys: keys(list),
            cursor,
        }
    }

    /// The keys of `list` a search would still read.
    fn to_read(view: &ChargedView, list: &[&str]) -> Option<Vec<String>> {
        let mut k = keys(list);
        view.retain_charged("p", &mut k).then_some(k)
    }

    #[test]
    fn a_fresh_view_drops_keys_never_charged() {
        let view = ChargedView::new(Duration::from_secs(60));
        assert_eq!(to_read(&view, &["a"]), None, "no view yet");
        let update = view.claim_update("p").unwrap();
        assert_eq!(update.after, None, "the first update reads whole");
        assert_eq!(view.claim_update("p"), None, "one update at a time");
        view.apply("p", update, &answer(&["a", "b"], 7));
        assert_eq!(
            to_read(&view, &["a", "new", "b\x003600"]).unwrap(),
            ["a", "b\x003600"],
            "a rolling counter's window is not part of its stored key"
        );
        assert_eq!(view.claim_update("p"), None, "fresh");
        // Another project has no view.
        let mut other = keys(&["a"]);
        assert!(!view.retain_charged("q", &mut other));
    }

    #[test]
    fn updates_ask_from_the_cursor_and_only_add() {
        let view = ChargedView::new(Duration::from_millis(1));
        let update = view.claim_update("p").unwrap();
        view.apply("p", update, &answer(&["a"], 7));
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(to_read(&view, &["a"]), None, "stale: read everything");
        let update = view.claim_update("p").unwrap();
        assert_eq!(update.after, Some(7));
        // A key charged through this service while the update ran.
        view.add("p", ["c"].into_iter());
        view.apply("p", update, &answer(&["b"], 9));
        let view_fresh = ChargedView {
            projects: RwLock::new(std::mem::take(&mut *view.write())),
            ttl: Duration::from_secs(60),
        };
        assert_eq!(
            to_read(&view_fresh, &["a", "b", "c", "d"]).unwrap(),
            ["a", "b", "c"]
        );
    }

    #[test]
    fn a_failed_update_lets_another_search_try() {
        let view = ChargedView::new(Duration::from_secs(60));
        view.claim_update("p").unwrap();
        view.failed("p");
        assert!(view.claim_update("p").is_some());
    }

    #[test]
    fn a_ttl_of_zero_keeps_no_view() {
        let view = ChargedView::new(Duration::ZERO);
        assert_eq!(view.claim_update("p"), None);
        assert_eq!(to_read(&view, &["a"]), None);
    }

    #[test]
    fn too_many_keys_leave_the_project_without_a_view() {
        let view = ChargedView::new(Duration::from_secs(60));
        let update = view.claim_update("p").unwrap();
        let many: Vec<String> = (0..=MAX_KEYS).map(|i| i.to_string()).collect();
        view.apply(
            "p",
            update,
            &ChargedKeys {
                keys: many,
                cursor: 1,
            },
        );
        assert_eq!(to_read(&view, &["a"]), None);
        assert_eq!(view.claim_update("p"), None, "not before a whole read");
    }
}
