//! Fuzzing harnesses: what each `cargo fuzz` target of `fuzz/` runs on one
//! input, with the invariants it asserts.
//!
//! They live in the crate, not in `fuzz/`, so that `tests/fuzz_regressions.rs`
//! replays a committed crashing input through exactly the code the fuzzer
//! ran. Not part of the API: hidden from the docs, free to change.
//!
//! Every harness takes raw bytes and returns nothing; a finding is a panic
//! (a bug of the crate, or a broken invariant asserted here). Input formats:
//!
//! | harness | input |
//! |---|---|
//! | [`formula`] | line 1: the formula; each further `name=value` line binds a variable |
//! | [`condition`] | byte 0: op, byte 1: type, attribute and valueType; then the value on the first line, request values on the others |
//! | [`campaign`] | campaign JSON (as `POST /campaigns` takes it) |
//! | [`request`] | search / redeem request JSON, against the [`FIXTURES`] |
//! | [`quota_key`] | line 1: the quota key template; each further `name=value` line a request attribute |
//! | [`content_query`] | `key=value` query lines, an empty line, then a JSON array of record `data` objects |

mod content;
mod engine;
mod text;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use chrono::{DateTime, TimeZone, Utc};

pub use content::content_query;
pub use engine::{campaign, quota_key, request, FIXTURES};
pub use text::{condition, formula};

/// Runs a future of the memory store to completion. The memory store never
/// waits (its locks are synchronous), so one poll finishes it.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("a memory store future waited"),
    }
}

/// The fixed "now" of every harness (inside the fixtures' running dates).
fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 15, 10, 0, 0)
        .single()
        .expect("a valid date")
}

/// Line 1 of `text`, and the `name=value` pairs of the other lines.
fn head_and_pairs(text: &str) -> (&str, Vec<(&str, &str)>) {
    let mut lines = text.split('\n');
    let head = lines.next().unwrap_or_default();
    (head, lines.filter_map(|l| l.split_once('=')).collect())
}
