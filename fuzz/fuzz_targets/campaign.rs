//! Fuzz target `campaign`: see `accord::fuzzing::campaign` for the input format and
//! the invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| accord::fuzzing::campaign(data));
