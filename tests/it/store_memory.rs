//! The store behaviour suite on the memory store (the reference model).
#![cfg(feature = "memory")]

use std::sync::Arc;

use accord::store::memory::MemoryStore;

use crate::suite;

// Async like every fixture: the suite's macro awaits it.
#[allow(clippy::unused_async)]
async fn fixture() -> Option<(Arc<MemoryStore>, suite::Guard)> {
    Some((Arc::new(MemoryStore::new()), Box::new(())))
}

suite::campaign_store::campaign_store_tests!(fixture);
suite::services::services_tests!(fixture);
suite::promotions::promotions_tests!(fixture);
suite::code_pools::code_pool_tests!(fixture);
suite::holds::holds_tests!(fixture);
suite::usage_reads::usage_read_tests!(fixture);
suite::hold_codes::hold_codes_tests!(fixture);
suite::outbox::outbox_tests!(fixture);
