//! Test support, not production code: the fuzzing harnesses of `fuzz/`
//! (feature `testkit`, public as `accord::fuzzing`, which no default
//! feature enables) and a store double that counts reads (the crate's own
//! unit tests only).
//!
//! It may import from every layer; only test code imports from it.

#[cfg(all(test, feature = "memory"))]
pub(crate) mod counting;
#[cfg(feature = "testkit")]
pub mod fuzzing;
