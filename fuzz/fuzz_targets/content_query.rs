//! Fuzz target `content_query`: see `accord::fuzzing::content_query` for the input format and
//! the invariants checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| accord::fuzzing::content_query(data));
