//! Support code the test binaries share: a server over the router with a
//! client and tokens (`http_support`), PostgreSQL schemas of one's own
//! (`pg_support`), a log writer that keeps what it is given
//! (`log_capture`).
#![allow(dead_code)] // each binary uses part of it

pub mod http_support;
pub mod log_capture;
pub mod pg_support;
