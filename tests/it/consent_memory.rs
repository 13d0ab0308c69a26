//! The consent behaviour suite on the memory store (the reference model).

use std::sync::Arc;

use accord::store::memory::MemoryStore;

use crate::suite;

async fn fixture() -> Option<(Arc<MemoryStore>, suite::Guard)> {
    Some((Arc::new(MemoryStore::new()), Box::new(())))
}

suite::consent::consent_suite!(fixture);
