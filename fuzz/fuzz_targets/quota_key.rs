//! Fuzz target `quota_key`: see `accord::fuzzing::quota_key` for the input format and
//! the invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| accord::fuzzing::quota_key(data));
