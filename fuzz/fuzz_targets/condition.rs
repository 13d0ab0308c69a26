//! Fuzz target `condition`: see `accord::fuzzing::condition` for the input format and
//! the invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| accord::fuzzing::condition(data));
