//! The quota usage that search reads, cached per service.
//!
//! Search leaves out the campaigns whose quotas are already used up for the
//! request: a read-only check, nothing reserved. Asking the store for the
//! usage of every charged key on every search costs a round trip per
//! search (on SQLite, a hop to the driver's worker thread and back), more
//! than the rest of the search. So a service keeps what it read, per
//! project and key, for the same interval it trusts its compiled catalog
//! ([`DEFAULT_REFRESH`](super::snapshots::DEFAULT_REFRESH) unless set with
//! [`with_refresh_interval`](super::CampaignService::with_refresh_interval)).
//! The keys a search does not find here are read from the store at once,
//! in one call (on the SQL stores, one statement). What a search sees:
//!
//! - **read your writes**: a redeem or a cancel through this service forgets
//!   the keys it charged or gave back, once the store has written them; a
//!   search that starts after it returns reads them from the store again. A
//!   read that was under way while a write happened is used for its own
//!   search but not kept (a write generation guards the cache);
//! - **other processes** (or other services over the same store): their
//!   redemptions are seen within the refresh interval;
//! - **redeem stays authoritative**: it never reads this cache; the store
//!   checks and charges every quota in one atomic operation. A search that
//!   offered a campaign whose quota another process has just used up is
//!   answered by redeem with `quota_exceeded`, as it always could be
//!   (search reserves nothing).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use rust_decimal::Decimal;

use super::charged::ChargedView;
use crate::core::campaign::{QuotaCharge, QuotaWindow};
use crate::store::Counter;

/// What the cache keeps the usage of a charge's counter under: its key, and
/// for a rolling quota the key, a NUL (which no key holds: requests with
/// one are refused) and the window in seconds.
pub(crate) fn cache_key(c: &QuotaCharge) -> Cow<'_, str> {
    match c.window {
        None => Cow::Borrowed(c.key.as_str()),
        Some(w) => Cow::Owned(format!("{}\0{}", c.key, w.seconds())),
    }
}

/// The counter a [`cache_key`] names, made of that key without a copy.
pub(crate) fn into_counter(mut cache_key: String) -> Counter {
    let window = cache_key.find('\0').and_then(|nul| {
        let window = cache_key[nul + 1..]
            .parse()
            .ok()
            .and_then(QuotaWindow::from_seconds);
        cache_key.truncate(nul);
        window
    });
    Counter {
        key: cache_key,
        window,
    }
}

/// The [`cache_key`] of a counter, made of its key (copied only for a
/// rolling quota, whose cache key adds the window).
pub(crate) fn into_cache_key(counter: Counter) -> String {
    match counter.window {
        None => counter.key,
        Some(w) => format!("{}\0{}", counter.key, w.seconds()),
    }
}

/// Keys kept before stale entries are swept (and, if all are fresh, the
/// whole cache dropped): bounds the memory of many users' per-user keys.
const MAX_KEYS: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Entry {
    used: Decimal,
    read_at: Instant,
}

#[derive(Debug, Default)]
struct Inner {
    /// Project → key → usage (keys never charged are kept as zero).
    projects: HashMap<String, HashMap<String, Entry>>,
    keys: usize,
    /// Bumped by every write through the service.
    generation: u64,
}

#[derive(Debug)]
pub(crate) struct UsageCache {
    inner: RwLock<Inner>,
    ttl: Duration,
    /// The keys ever charged, which answers the others with zero.
    pub(crate) charged: ChargedView,
}

/// What a search found here and what it still has to read from the store,
/// with the generation to hand back to [`UsageCache::keep`].
#[derive(Debug)]
pub(crate) struct Lookup {
    /// Per key looked up, in order: its usage, or `None` to read.
    pub(crate) used: Vec<Option<Decimal>>,
    /// The keys to read, sorted, each once.
    pub(crate) missing: Vec<String>,
    pub(crate) generation: u64,
}

impl UsageCache {
    pub(crate) fn new(ttl: Duration) -> Self {
        UsageCache {
            inner: RwLock::new(Inner::default()),
            ttl,
            charged: ChargedView::new(ttl),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The fresh usage of `keys` known here, and the keys to read. Copies
    /// only the keys to read: a search with hundreds of hits looks up
    /// hundreds of keys.
    pub(crate) fn lookup(&self, project: &str, keys: &[&str]) -> Lookup {
        let now = Instant::now();
        let mut used = Vec::with_capacity(keys.len());
        let mut missing: Vec<&str> = Vec::new();
        let generation = {
            let inner = self.read();
            let cached = inner.projects.get(project);
            for &key in keys {
                match cached.and_then(|c| c.get(key)) {
                    Some(e) if now.saturating_duration_since(e.read_at) < self.ttl => {
                        used.push(Some(e.used));
                    }
                    _ => {
                        used.push(None);
                        missing.push(key);
                    }
                }
            }
            inner.generation
        };
        missing.sort_unstable();
        missing.dedup();
        Lookup {
            used,
            missing: missing.into_iter().map(str::to_owned).collect(),
            generation,
        }
    }

    /// Keeps what was read, each key with its usage (zero: never charged),
    /// unless a write went through since the [`lookup`](Self::lookup) of
    /// `generation`: that read may predate the write.
    pub(crate) fn keep(
        &self,
        project: &str,
        keys: Vec<(String, Decimal)>,
        generation: u64,
        read_at: Instant,
    ) {
        if self.ttl.is_zero() {
            return;
        }
        let mut inner = self.write();
        if inner.generation != generation {
            return;
        }
        if inner.keys + keys.len() > MAX_KEYS {
            let ttl = self.ttl;
            let now = Instant::now();
            for c in inner.projects.values_mut() {
                c.retain(|_, e| now.saturating_duration_since(e.read_at) < ttl);
            }
            inner.projects.retain(|_, c| !c.is_empty());
            inner.keys = inner.projects.values().map(HashMap::len).sum();
            if inner.keys + keys.len() > MAX_KEYS {
                inner.projects.clear();
                inner.keys = 0;
            }
        }
        let Inner {
            projects,
            keys: count,
            ..
        } = &mut *inner;
        let cached = match projects.get_mut(project) {
            Some(cached) => cached,
            None => projects.entry(project.to_owned()).or_default(),
        };
        for (key, used) in keys {
            if cached.insert(key, Entry { used, read_at }).is_none() {
                *count += 1;
            }
        }
    }

    /// Forgets every key of `project`: the store may have written any.
    pub(crate) fn forget_project(&self, project: &str) {
        let mut inner = self.write();
        inner.generation = inner.generation.wrapping_add(1);
        if let Some(cached) = inner.projects.remove(project) {
            inner.keys -= cached.len();
        }
    }

    /// Forgets `keys` of `project`: the store has just written them (so
    /// they are charged keys now, if they were not).
    pub(crate) fn forget<'k>(
        &self,
        project: &str,
        keys: impl Iterator<Item = std::borrow::Cow<'k, str>>,
    ) {
        let keys: Vec<Cow<'k, str>> = keys.collect();
        self.charged.add(project, keys.iter().map(AsRef::as_ref));
        let mut inner = self.write();
        inner.generation = inner.generation.wrapping_add(1);
        let Inner {
            projects,
            keys: count,
            ..
        } = &mut *inner;
        if let Some(cached) = projects.get_mut(project) {
            for key in &keys {
                if cached.remove(key.as_ref()).is_some() {
                    *count -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The usage read for `keys`: as in `pairs`, else zero.
    fn read(keys: Vec<String>, pairs: &[(&str, i64)]) -> Vec<(String, Decimal)> {
        keys.into_iter()
            .map(|k| {
                let used = pairs.iter().find(|(p, _)| *p == k).map_or(0, |&(_, v)| v);
                (k, Decimal::from(used))
            })
            .collect()
    }

    fn missing(cache: &UsageCache, project: &str, keys: &[&str]) -> Vec<String> {
        cache.lookup(project, keys).missing
    }

    #[test]
    fn keeps_reads_for_the_ttl_zero_for_keys_never_charged() {
        let cache = UsageCache::new(Duration::from_secs(60));
        let l = cache.lookup("p", &["a", "b", "a"]);
        assert_eq!(l.missing, ["a", "b"], "each key once");
        assert_eq!(l.used, [None, None, None]);
        cache.keep(
            "p",
            read(l.missing, &[("a", 3)]),
            l.generation,
            Instant::now(),
        );
        let l = cache.lookup("p", &["a", "b", "a"]);
        assert!(l.missing.is_empty());
        let three = Some(Decimal::from(3));
        assert_eq!(l.used, [three, Some(Decimal::ZERO), three]);
        // Another project shares nothing.
        assert_eq!(missing(&cache, "q", &["a"]), ["a"]);
    }

    #[test]
    fn a_cache_key_names_its_counter_and_back() {
        for window in [None, QuotaWindow::from_seconds(3600)] {
            let charge = QuotaCharge {
                key: "C1-u%2D1".to_owned(),
                amount: Decimal::ONE,
                limit: Decimal::ONE,
                window,
            };
            let key = cache_key(&charge).into_owned();
            let counter = into_counter(key.clone());
            assert_eq!(
                counter,
                Counter {
                    key: charge.key.clone(),
                    window
                }
            );
            assert_eq!(into_cache_key(counter), key);
        }
    }

    #[test]
    fn entries_expire() {
        let cache = UsageCache::new(Duration::from_millis(100));
        let l = cache.lookup("p", &["a"]);
        let long_ago = Instant::now()
            .checked_sub(Duration::from_millis(200))
            .unwrap();
        cache.keep("p", read(l.missing, &[("a", 1)]), l.generation, long_ago);
        assert_eq!(missing(&cache, "p", &["a"]), ["a"]);
    }

    #[test]
    fn a_ttl_of_zero_keeps_nothing() {
        let cache = UsageCache::new(Duration::ZERO);
        let l = cache.lookup("p", &["a"]);
        cache.keep("p", read(l.missing, &[]), l.generation, Instant::now());
        assert_eq!(missing(&cache, "p", &["a"]), ["a"]);
    }

    #[test]
    fn a_write_forgets_its_keys_and_a_read_under_way_is_not_kept() {
        let cache = UsageCache::new(Duration::from_secs(60));
        let l = cache.lookup("p", &["a", "b"]);
        cache.keep("p", read(l.missing, &[]), l.generation, Instant::now());
        cache.forget("p", ["a"].into_iter().map(Cow::Borrowed));
        assert_eq!(missing(&cache, "p", &["a", "b"]), ["a"]);
        // A read that began before a write: used by its search, not kept.
        let before = cache.lookup("p", &["a"]);
        cache.forget("p", ["b"].into_iter().map(Cow::Borrowed));
        cache.keep(
            "p",
            read(before.missing, &[("a", 1)]),
            before.generation,
            Instant::now(),
        );
        assert_eq!(missing(&cache, "p", &["a"]), ["a"]);
    }

    #[test]
    fn the_number_of_keys_is_bounded() {
        let cache = UsageCache::new(Duration::from_secs(60));
        let keys: Vec<String> = (0..MAX_KEYS).map(|i| format!("k{i}")).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let l = cache.lookup("p", &keys);
        cache.keep("p", read(l.missing, &[]), l.generation, Instant::now());
        assert_eq!(cache.read().keys, MAX_KEYS);
        let l = cache.lookup("p", &["new"]);
        cache.keep("p", read(l.missing, &[]), l.generation, Instant::now());
        assert_eq!(
            cache.read().keys,
            1,
            "all fresh: dropped, then the new key kept"
        );
        assert!(missing(&cache, "p", &["new"]).is_empty());
    }
}
