//! PostgreSQL for the integration tests: the server's URL (or a printed
//! reason to skip), and a schema of one's own so that tests run in
//! parallel without seeing each other's rows, dropped when its [`Schema`]
//! guard is (a test that panics drops it too; one killed leaves it to the
//! next run, which drops schemas older than an hour).
#![allow(dead_code)] // each test binary uses part of it

use std::sync::atomic::{AtomicU32, Ordering};
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

/// A schema of one's own: its name (`Deref` to `str`), dropped with
/// everything in it when the guard is dropped.
#[derive(Debug)]
pub struct Schema {
    url: String,
    name: String,
}

impl Schema {
    /// The schema's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl std::ops::Deref for Schema {
    type Target = str;

    fn deref(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        drop_schema(&self.url, &self.name);
    }
}

/// Drops `schema` on a fresh connection, from a thread with a runtime of
/// its own (a guard may be dropped inside a runtime, which cannot block).
/// A failure is printed, not raised: the next run drops stale schemas.
pub fn drop_schema(url: &str, schema: &str) {
    let (url, name) = (url.to_owned(), schema.to_owned());
    let done = std::thread::spawn(move || {
        let schema = name;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut conn = sqlx::PgConnection::connect(&url).await?;
            sqlx::query(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                .execute(&mut conn)
                .await?;
            conn.close().await
        })
    })
    .join();
    if !matches!(done, Ok(Ok(()))) {
        eprintln!("could not drop schema {schema}: {done:?}");
    }
}

/// Schemas this process made (see [`create_schema`]).
static MADE: AtomicU32 = AtomicU32::new(0);

/// Creates the schema `accord_<kind>_<unix time>_<pid>_<n>[_<tag>]` (`n`
/// counts the schemas this process made, so two tests with the same tag
/// started in the same second get schemas of their own), after dropping the
/// schemas of the same kind left by runs more than an hour old; the guard
/// drops it.
pub async fn create_schema(url: &str, kind: &str, tag: &str) -> Schema {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let n = MADE.fetch_add(1, Ordering::Relaxed);
    let mut name = format!("accord_{kind}_{now}_{}_{n}", std::process::id());
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
    Schema {
        url: url.to_owned(),
        name,
    }
}

/// A PostgreSQL store on a pool of two connections in a schema of its own
/// (named after `kind`; the guard drops it), or `None` (after printing
/// why) to skip `what`.
#[cfg(feature = "postgres")]
pub async fn store_in_schema(
    what: &str,
    kind: &str,
) -> Option<(accord::store::postgres::PostgresStore, Schema)> {
    use std::str::FromStr;

    use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

    let url = database_url(what)?;
    let schema = create_schema(&url, kind, "").await;
    let options = PgConnectOptions::from_str(&url)
        .unwrap()
        .options([("search_path", schema.name())]);
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .unwrap();
    let store = accord::store::postgres::PostgresStore::from_pool(pool)
        .await
        .unwrap();
    Some((store, schema))
}

/// `url` with `schema` as the search path of every connection.
pub fn with_schema(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-c%20search_path%3D{schema}")
}

/// A schema many tests of a process share (one migration for them all):
/// created by the first that asks, dropped when the last one using it
/// ends. A later test creates the next one (`_<n>` after its name).
pub struct Shared {
    kind: &'static str,
    state: std::sync::Mutex<SharedState>,
    creating: tokio::sync::Mutex<()>,
}

struct SharedState {
    schema: Option<Schema>,
    users: usize,
    made: usize,
}

/// One test's use of a [`Shared`] schema: its name (`Deref` to `str`).
pub struct SharedUse {
    shared: &'static Shared,
    name: String,
}

impl Shared {
    /// A shared schema of `kind` (`accord_<kind>_…`).
    pub const fn new(kind: &'static str) -> Self {
        Shared {
            kind,
            state: std::sync::Mutex::new(SharedState {
                schema: None,
                users: 0,
                made: 0,
            }),
            creating: tokio::sync::Mutex::const_new(()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, SharedState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The schema, created if no test uses one now.
    pub async fn get(&'static self, url: &str) -> SharedUse {
        loop {
            {
                let mut state = self.state();
                if let Some(schema) = &state.schema {
                    let name = schema.name().to_owned();
                    state.users += 1;
                    return SharedUse { shared: self, name };
                }
            }
            let _one = self.creating.lock().await;
            if self.state().schema.is_some() {
                continue;
            }
            let made = self.state().made + 1;
            let schema = create_schema(url, self.kind, &made.to_string()).await;
            let mut state = self.state();
            state.made = made;
            state.schema = Some(schema);
        }
    }
}

impl std::ops::Deref for SharedUse {
    type Target = str;

    fn deref(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for SharedUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

impl Drop for SharedUse {
    fn drop(&mut self) {
        let last = {
            let mut state = self.shared.state();
            state.users -= 1;
            if state.users == 0 {
                state.schema.take()
            } else {
                None
            }
        };
        // Dropped outside the lock: the drop waits for the database.
        drop(last);
    }
}
