//! What is SQLite's own in the shared SQL implementation
//! ([`Dialect`]): column types (UUIDs as hyphenated text, timestamps as
//! integer microseconds, decimals as their exact text: see
//! `migrations/sqlite/0001_campaigns.sql`), transactions (`BEGIN IMMEDIATE`
//! behind the process's write queue), the quota guard checked in Rust, the
//! `consent_seq` counter row, and JSON access through SQLite's JSON
//! functions.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde_json::{Map, Value};
use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{Arguments as _, Sqlite, SqliteConnection};
use uuid::Uuid;

use super::{SqliteStore, BUSY_TIMEOUT};
use crate::core::campaign::QuotaCharge;
use crate::core::consent::{ContentFilter, ContentSort};
use crate::store::sql::content::{json_path, number_keys_json, FilterValue};
use crate::store::sql::dialect::{execute, row, run_statements, Abort, Dialect, Tx};
use crate::store::sql::marks::{sweep_key, usage};
use crate::store::sql::query::{self as query, native_getters, Arg, Json, Sql, SqlRow, Typed};
use crate::store::sql::queue::RedeemQueue;

use crate::store::sql::{corrupt, is_unique_violation, Fault};
use crate::store::SortDirection;
use crate::{Error, Result};

/// The text of `sql` with anonymous placeholders ([`Sql::anonymous`]: a
/// numbered one costs SQLite a walk of the statement's parameter names),
/// and its arguments in SQLite's column types.
fn bound(sql: &Sql) -> Result<(Cow<'_, str>, SqliteArguments<'_>), sqlx::Error> {
    let (text, args) = sql.anonymous()?;
    Ok((Cow::Owned(text), arguments(args)?))
}

/// The arguments `args` in SQLite's column types.
fn arguments(args: Vec<&Arg>) -> Result<SqliteArguments<'_>, sqlx::Error> {
    query::arguments(args, |out: &mut SqliteArguments<'_>, arg| match arg {
        Typed::Uuid(v) => out.add(v.hyphenated().to_string()),
        Typed::Time(v) => out.add(v.map(|t| t.timestamp_micros())),
        Typed::Decimal(v) => out.add(v.to_string()),
        Typed::Json(v) => out.add(v),
    })
}

impl SqlRow for SqliteRow {
    native_getters!();

    fn uuid(&self, column: &str) -> Result<Option<Uuid>> {
        query::get::<_, Option<String>>(self, column)?
            .map(|s| Uuid::parse_str(&s).map_err(|e| corrupt(column, e)))
            .transpose()
    }

    fn time(&self, column: &str) -> Result<Option<DateTime<Utc>>> {
        query::get::<_, Option<i64>>(self, column)?
            .map(|m| DateTime::from_timestamp_micros(m).ok_or_else(|| corrupt(column, m)))
            .transpose()
    }

    fn decimal(&self, column: &str) -> Result<Option<Decimal>> {
        query::get::<_, Option<String>>(self, column)?
            .map(|s| s.parse().map_err(|e| corrupt(column, e)))
            .transpose()
    }

    fn json(&self, column: &str) -> Result<Option<String>> {
        query::get(self, column)
    }
}

/// The [`Fault`] of a SQLite error; `None` for another driver's.
fn fault(db: &dyn sqlx::error::DatabaseError) -> Option<Fault> {
    db.try_downcast_ref::<sqlx::sqlite::SqliteError>()?;
    Some(match db.code() {
        Some(code) if is_transient(&code) => Fault::Transient,
        _ => Fault::Other,
    })
}

/// SQLite result codes, primary or extended (the primary code is the low
/// byte): busy or locked past the busy timeout, I/O error, disk full,
/// cannot open the file.
fn is_transient(code: &str) -> bool {
    code.parse::<i32>().is_ok_and(|n| {
        matches!(
            n & 0xff,
            5 /* BUSY */ | 6 /* LOCKED */ | 10 /* IOERR */ | 13 /* FULL */ | 14 /* CANTOPEN */
        )
    })
}

/// Stores the usage of a key (the caller holds the write lock).
async fn set_usage(
    conn: &mut SqliteConnection,
    project: &str,
    key: &str,
    used: Decimal,
) -> Result<(), Abort> {
    let sql = Sql::new(
        "INSERT INTO quota_usage (project_id, quota_key, used) VALUES ($1, $2, $3) \
         ON CONFLICT (project_id, quota_key) DO UPDATE SET used = excluded.used",
    )
    .bind(project)
    .bind(key)
    .bind(used);
    execute::<SqliteStore>(conn, &sql).await?;
    Ok(())
}

/// Appends `rank(attribute)`: 0 numbers, 1 strings, 2 booleans, 3 anything
/// else (null, missing, array, object).
fn push_rank(sql: &mut Sql, path: &str) {
    sql.push("CASE json_type(v.data, ").push_bind(path).push(
        ") WHEN 'integer' THEN 0 WHEN 'real' THEN 0 WHEN 'text' THEN 1 \
         WHEN 'true' THEN 2 WHEN 'false' THEN 2 ELSE 3 END",
    );
}

impl Dialect for SqliteStore {
    type Db = Sqlite;
    type Row = SqliteRow;

    // The write transaction holds the database's only write lock.
    const WRITING_WITH: bool = false;
    const FOR_UPDATE: &'static str = "";
    const FOR_SHARE: &'static str = "";
    const SKIP_LOCKED: &'static str = "";
    const POSITION_FN: &'static str = "instr";
    // The unary `+` makes the term an expression no index is on.
    const NOT_BY_INDEX: &'static str = "+";
    const MIGRATION_HISTORY: &'static str = "CREATE TABLE IF NOT EXISTS accord_migrations (
        version INTEGER PRIMARY KEY,
        description TEXT NOT NULL,
        checksum BLOB NOT NULL,
        installed_on TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)";
    // The one-row counter: the caller holds the write lock, and rolling
    // back gives the number back.
    const NEXT_SEQ: &'static str =
        "UPDATE consent_seq SET last = last + 1 WHERE id = 1 RETURNING last";
    const MIGRATOR: &'static sqlx::migrate::Migrator = &super::MIGRATOR;
    // One writer at a time holds the file's write lock anyway.
    // Bounded by the write queue and the busy timeout instead.
    const WRITE_LIMIT: Option<std::time::Duration> = None;
    const HAS_TABLE: &'static str =
        "SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = $1";
    // Writers take turns and rows are never deleted: a new key's number is
    // one above every number committed before it.
    const CHARGED_ORDER: &'static str = "charged_seq";
    const CHARGED_CURSOR: &'static str =
        "SELECT COALESCE(MAX(charged_seq), 0) AS cursor FROM quota_usage";

    fn pool(&self) -> &sqlx::Pool<Sqlite> {
        &self.pool
    }

    fn redeem_queue(&self) -> &RedeemQueue {
        &self.redeems
    }

    // One writer at a time anyway.
    fn group_leaders(&self) -> usize {
        1
    }

    run_statements!();

    /// `BEGIN IMMEDIATE`, after this process's earlier writers (see the
    /// module docs of `store::sqlite`).
    async fn begin_write(&self) -> Result<Tx<Self>, Abort> {
        let gate = tokio::time::timeout(BUSY_TIMEOUT, self.write_gate.clone().lock_owned())
            .await
            .map_err(|_| {
                Error::unavailable(format!(
                    "waited {} s behind this process's other writers",
                    BUSY_TIMEOUT.as_secs()
                ))
            })?;
        let tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        Ok(Tx::new(tx, Some(Box::new(gate))))
    }

    async fn begin_read(&self) -> Result<Tx<Self>, Abort> {
        Ok(Tx::new(self.pool.begin().await?, None))
    }

    // Transactions take the write lock first (BEGIN IMMEDIATE), so SQLite
    // never aborts one to break a deadlock; waiting is its busy timeout.
    fn fault(db: &dyn sqlx::error::DatabaseError) -> Fault {
        fault(db).unwrap_or(Fault::Other)
    }

    fn is_retryable(_: &sqlx::Error) -> bool {
        false
    }

    fn campaign_key_violated(e: &sqlx::Error) -> Option<bool> {
        // SQLite names the columns, not the constraint.
        if is_unique_violation(e, "campaign.id") {
            Some(true)
        } else if is_unique_violation(e, "campaign.ref_code") {
            Some(false)
        } else {
            None
        }
    }

    /// Decimals are TEXT here, so the guard cannot be a SQL comparison: it
    /// reads the usage, checks and adds in Rust with `Decimal`, and writes
    /// it back, inside the `BEGIN IMMEDIATE` transaction, which holds
    /// SQLite's single write lock: no other writer, in this process or
    /// another, can run between the read and the write. The read also says
    /// whether the key holds hold charges expired at `at`; only then are
    /// they swept (a statement more), so a redeem of a key without holds
    /// sends what it did before holds existed.
    async fn charge(
        conn: &mut SqliteConnection,
        project: &str,
        charge: &QuotaCharge,
        at: DateTime<Utc>,
    ) -> Result<bool, Abort> {
        let read = Sql::new(
            "SELECT used, EXISTS (SELECT 1 FROM quota_mark m WHERE m.project_id = $1 \
             AND m.quota_key = $2 AND m.window_seconds = 0 AND m.expires_at <= $3) AS stale \
             FROM quota_usage WHERE project_id = $1 AND quota_key = $2",
        )
        .bind(project)
        .bind(&charge.key)
        .bind(at);
        let (used, stale) = match row::<Self>(conn, &read).await? {
            Some(r) => (r.col::<Decimal>("used")?, r.col::<i64>("stale")? != 0),
            None => (Decimal::ZERO, false),
        };
        let back = if stale {
            sweep_key::<Self>(conn, project, &charge.key, at).await?
        } else {
            Decimal::ZERO
        };
        let used = used
            .checked_sub(back)
            .ok_or_else(|| Error::internal("quota usage out of decimal range"))?;
        match used.checked_add(charge.amount) {
            Some(total) if total <= charge.limit => {
                set_usage(conn, project, &charge.key, total).await?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn release(
        conn: &mut SqliteConnection,
        project: &str,
        charge: &QuotaCharge,
    ) -> Result<(), Abort> {
        if let Some(used) = usage::<Self>(conn, project, &charge.key).await? {
            let back = used
                .checked_sub(charge.amount)
                .ok_or_else(|| Error::internal("quota usage out of decimal range"))?;
            set_usage(conn, project, &charge.key, back).await?;
        }
        Ok(())
    }

    fn derived_content_columns(data: &Map<String, Value>) -> Result<Vec<(&'static str, Arg)>> {
        Ok(vec![("number_keys", Json(number_keys_json(data)?).into())])
    }

    fn json_text(data: &str, attribute: &'static str) -> String {
        format!("json_extract({data}, '$.{attribute}')")
    }

    fn json_is_string(data: &str, attribute: &'static str) -> String {
        format!("json_type({data}, '$.{attribute}') = 'text'")
    }

    /// `json_each` over the attribute — one row for a scalar, one per
    /// element for an array (an object is excluded: its members are not
    /// elements) — accepting a row that is the filter's string (or its
    /// instant's stored form), one of its number texts, or its boolean.
    fn push_content_filter(sql: &mut Sql, filter: &ContentFilter) -> Result<()> {
        let path = json_path(&filter.attribute);
        let value = FilterValue::of(&filter.value);
        sql.push("EXISTS (SELECT 1 FROM json_each(v.data, ")
            .push_bind(path.clone())
            .push(") j WHERE json_type(v.data, ")
            .push_bind(path)
            .push(") <> 'object' AND ((j.type = 'text' AND j.atom IN (")
            .push_bind(value.text)
            .push(", ")
            .push_bind(
                value
                    .instant
                    .clone()
                    .unwrap_or_else(|| value.text.to_owned()),
            )
            .push("))");
        let texts = value.number_texts();
        if !texts.is_empty() {
            // The number's text as stored (`->` keeps a number's literal).
            sql.push(" OR (j.type IN ('integer', 'real') AND (v.data -> j.fullkey) IN (")
                .push_list(texts)
                .push("))");
        }
        match value.boolean {
            Some(true) => sql.push(" OR j.type = 'true'"),
            Some(false) => sql.push(" OR j.type = 'false'"),
            None => sql,
        };
        sql.push("))");
        Ok(())
    }

    /// Rank 3 last whatever the direction, then the rank and the typed
    /// value (numbers by their exact keys in the `number_keys` column)
    /// in the key's direction.
    fn push_content_sort(sql: &mut Sql, key: &ContentSort) {
        let path = json_path(&key.attribute);
        let dir = match key.direction {
            SortDirection::Asc => " ASC, ",
            SortDirection::Desc => " DESC, ",
        };
        push_rank(sql, &path);
        sql.push(" = 3, ");
        push_rank(sql, &path);
        sql.push(dir)
            .push("json_extract(v.number_keys, ")
            .push_bind(path.clone())
            .push(")")
            .push(dir)
            .push("CASE json_type(v.data, ")
            .push_bind(path.clone())
            .push(") WHEN 'text' THEN json_extract(v.data, ")
            .push_bind(path.clone())
            .push(") END")
            .push(dir)
            .push("CASE json_type(v.data, ")
            .push_bind(path)
            .push(") WHEN 'true' THEN 1 WHEN 'false' THEN 0 END")
            .push(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_codes() {
        assert!(is_transient("5"));
        assert!(is_transient("517")); // SQLITE_BUSY_SNAPSHOT
        assert!(!is_transient("2067")); // SQLITE_CONSTRAINT_UNIQUE
    }
}
