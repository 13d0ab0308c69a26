//! Test support that is not production code: the fuzzing harnesses of
//! `fuzz/` and a store double that counts reads. Built for the crate's own
//! unit tests and, as `accord::fuzzing`, behind the memory feature.
//!
//! It may import from every layer; no production module imports from it.

#[cfg(all(test, feature = "memory"))]
pub(crate) mod counting;
#[cfg(feature = "memory")]
pub mod fuzzing;
