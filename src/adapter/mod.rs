//! The adapters, each behind a feature: the HTTP API ([`http`]), the admin
//! console ([`admin`]) and the `accord` command with its server bootstrap
//! ([`cli`]).
//!
//! An adapter parses input, calls a service and shapes the response; it
//! decides nothing. It may import from every layer below (services, store,
//! core); `admin` may use `http` (auth, problems) and `cli` both, never the
//! other way round.

#[cfg(feature = "admin")]
pub mod admin;
#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "http")]
pub mod http;
