//! A PostgreSQL store in a schema of its own, for the benches that measure
//! every store: made from `ACCORD_TEST_PG_URL`, dropped afterwards.

use std::str::FromStr;

use accord::store::postgres::PostgresStore;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use tokio::runtime::Runtime;

/// A store in the schema `accord_bench_<tag>_<pid>`, and what drops it.
pub struct BenchSchema {
    pub store: PostgresStore,
    /// A connection of its own to the database, outside the schema.
    pub admin: PgPool,
    /// The schema's name.
    pub schema: String,
}

impl BenchSchema {
    /// `None` (with a printed reason) when `ACCORD_TEST_PG_URL` is unset.
    pub fn open(rt: &Runtime, tag: &str) -> Option<Self> {
        let Some(url) = std::env::var("ACCORD_TEST_PG_URL")
            .ok()
            .filter(|u| !u.is_empty())
        else {
            eprintln!("{tag}/postgres skipped: set ACCORD_TEST_PG_URL to a PostgreSQL database");
            return None;
        };
        let schema = format!("accord_bench_{tag}_{}", std::process::id());
        let admin = rt
            .block_on(PgPoolOptions::new().max_connections(1).connect(&url))
            .unwrap();
        let create = format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"");
        rt.block_on(sqlx::query(&create).execute(&admin)).unwrap();
        let options = PgConnectOptions::from_str(&url)
            .unwrap()
            .options([("search_path", schema.as_str())]);
        let pool = rt
            .block_on(
                PgPoolOptions::new()
                    .max_connections(10)
                    .connect_with(options),
            )
            .unwrap();
        let store = rt.block_on(PostgresStore::from_pool(pool)).unwrap();
        Some(Self {
            store,
            admin,
            schema,
        })
    }

    /// Closes the store and drops its schema.
    pub fn drop_schema(self, rt: &Runtime) {
        rt.block_on(self.store.close());
        let drop = format!("DROP SCHEMA \"{}\" CASCADE", self.schema);
        rt.block_on(sqlx::query(&drop).execute(&self.admin))
            .unwrap();
    }
}
