//! The in-memory store: the reference model every other store is tested
//! against. Safe to share between threads; each operation takes one lock, so
//! each is atomic.

mod campaign;
mod codes;
mod consent;
mod file;
mod hold;
mod outbox;

use std::sync::{Mutex, MutexGuard, PoisonError};

/// An in-memory implementation of every store trait.
#[derive(Debug, Default)]
pub struct MemoryStore {
    campaigns: Mutex<campaign::State>,
    consent: Mutex<consent::State>,
    files: Mutex<file::Files>,
    outbox: Mutex<outbox::State>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }
}

impl crate::store::Ping for MemoryStore {
    /// Always ready: the data is in this process.
    async fn ping(&self) -> crate::Result<()> {
        Ok(())
    }
}

/// Locks a mutex; a poisoned lock is recovered because every critical
/// section leaves the state consistent before anything that could panic.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
