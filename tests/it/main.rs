//! The integration tests, one binary (linked once): the store behaviour
//! suites on every store, the use cases of the services, and the HTTP API
//! through the router. Each module is one subject; `cargo test --test it
//! http_campaign` runs one.
//!
//! The other binaries are apart for a reason: `admin` drives a browser,
//! `reliability` kills servers and cuts connections (timing-sensitive, so
//! not beside hundreds of parallel tests), and `http_logging`,
//! `http_logging_errors`, `http_otel` and `http_readme` each install the
//! process-wide log subscriber.

#[path = "../support/mod.rs"]
mod support;
use support::{http_support, pg_support};

mod common;
mod suite;

mod acceptance_round_trips;
mod campaign_admin;
mod campaign_use_cases;
mod cases;
mod cli;
mod cli_codes;
mod cli_consent_check;
mod cli_evidence_keys;
mod cli_token_keys;
mod cli_transfer;
mod cli_verify;
mod consent_memory;
mod consent_wire;
mod examples;
mod fuzz_regressions;
mod http_auth;
mod http_campaign;
mod http_codes;
mod http_consent;
mod http_content_versions;
mod http_errors;
mod http_evidence;
mod http_files;
mod http_holds;
mod http_jwks_url;
mod http_limits;
mod http_openapi;
mod http_otel;
mod http_promotions;
mod http_quota_view;
mod http_receipts;
mod http_retention;
mod http_revisions;
mod http_webhooks;
mod layers;
mod redeem_round_trips;
mod search_round_trips;
mod snapshot_refresh;
mod store_memory;
mod store_postgres;
mod store_sqlite;
