//! The consent behaviour suite on the memory store (the reference model).

mod suite;

suite::consent::consent_suite!(async {
    std::sync::Arc::new(accord::store::memory::MemoryStore::new())
});
