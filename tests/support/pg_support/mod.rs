//! PostgreSQL for the integration tests: the server's URL (or a printed
//! reason to skip), and a schema of one's own so that tests run in
//! parallel without seeing each other's rows.
#![allow(dead_code)] // each test binary uses part of it

use std::time::{SystemTime, UNIX_EPOCH};

use sqlx::Connection;

/// The variable holding the server's URL; `.ci/run` sets it.
pub const URL_ENV: &str = "ACCORD_TEST_PG_URL";

/// Schemas of runs older than this are left-overs of earlier runs.
const STALE_AFTER_SECS: u64 = 3600;

/// The database URL, or `None` (after printing why) to skip `what`. In CI
/// (`CI` set) a missing URL is a failure, never a skip.
pub fn database_url(what: &str) -> Option<String> {
    match std::env::var(URL_ENV) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{URL_ENV} is not set, but CI is: {what} must run in CI \
                 (.ci/run sets {URL_ENV} to the machine's server)"
            );
            eprintln!(
                "skipped: set {URL_ENV} (e.g. postgres://postgres@127.0.0.1:5432/test) \
                 to run {what}"
            );
            None
        }
    }
}

/// Creates the schema `accord_<kind>_<unix time>_<pid>[_<tag>]`, after
/// dropping the schemas of the same kind left by runs more than an hour
/// old; returns its name.
pub async fn create_schema(url: &str, kind: &str, tag: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut name = format!("accord_{kind}_{now}_{}", std::process::id());
    if !tag.is_empty() {
        name = format!("{name}_{tag}");
    }
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let existing: Vec<String> = sqlx::query_scalar(&format!(
        "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'accord\\_{kind}\\_%'"
    ))
    .fetch_all(&mut conn)
    .await
    .unwrap();
    for old in existing {
        let created = old
            .split('_')
            .nth(2)
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(now);
        if now.saturating_sub(created) > STALE_AFTER_SECS {
            // Another process may be dropping it too.
            let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS \"{old}\" CASCADE"))
                .execute(&mut conn)
                .await;
        }
    }
    sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS \"{name}\""))
        .execute(&mut conn)
        .await
        .unwrap();
    name
}

/// `url` with `schema` as the search path of every connection.
pub fn with_schema(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-c%20search_path%3D{schema}")
}
