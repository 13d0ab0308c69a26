//! Reliability tests, one binary: crash safety (SIGKILL of server
//! processes), database faults (a TCP proxy cut between server and
//! PostgreSQL), clients that misbehave, and a short load run. Apart from
//! the `it` binary because their timings assume they are not sharing the
//! machine with hundreds of other tests (docs/reliability.md).

#[path = "../support/mod.rs"]
mod support;
use support::{http_support, pg_support};

/// The load generator (`examples/load`), whose server and traffic these
/// tests drive.
#[path = "../../examples/load/main.rs"]
#[allow(dead_code)] // its main is for `cargo run --example load`
mod load;
mod reliability_support;

mod codes_two_servers;
mod crash_safety;
mod db_faults;
mod holds_two_servers;
mod hostile_clients;
mod load_smoke;
mod webhooks_kill;
