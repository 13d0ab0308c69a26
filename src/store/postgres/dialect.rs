//! What is PostgreSQL's own in the shared SQL implementation
//! ([`Dialect`]): native column types (`uuid`, `timestamptz`, `numeric`,
//! `jsonb`), READ COMMITTED write transactions run again when the database
//! aborts one as a deadlock victim or a serialization failure, REPEATABLE
//! READ snapshots for lists, row locks, the quota guard as one guarded
//! upsert, the `consent_seq` sequence, and JSON access through `jsonb`
//! operators (filters as containment, served by the GIN index).

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde_json::{Map, Value};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgArguments, PgRow, PgTypeInfo, PgValueFormat, PgValueRef};
use sqlx::{Arguments as _, PgConnection, Postgres, TypeInfo as _, ValueRef as _};
use uuid::Uuid;

use super::PostgresStore;
use crate::core::campaign::QuotaCharge;
use crate::core::consent::{ContentFilter, ContentSort};
use crate::store::sql::content::FilterValue;
use crate::store::sql::dialect::{execute, row, run_statements, Abort, Dialect, Tx};
use crate::store::sql::query::{self as query, native_getters, Arg, Json, Sql, SqlRow, Typed};
use crate::store::sql::{is_unique_violation, Fault};
use crate::store::SortDirection;
use crate::{Error, Result};

/// A JSON document's text as a `jsonb` value, both ways: sent in the
/// binary format (a version byte, then the text), read from `jsonb` or
/// `json` without going through `serde_json::Value`.
struct JsonText<T>(T);

/// `jsonb`, as sqlx's own JSON type names it.
type JsonbType = sqlx::types::Json<()>;

impl sqlx::Type<Postgres> for JsonText<&str> {
    fn type_info() -> PgTypeInfo {
        <JsonbType as sqlx::Type<Postgres>>::type_info()
    }
}

impl sqlx::Encode<'_, Postgres> for JsonText<&str> {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        // The jsonb binary format, version 1.
        buf.push(1);
        buf.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }
}

impl sqlx::Type<Postgres> for JsonText<String> {
    fn type_info() -> PgTypeInfo {
        <JsonbType as sqlx::Type<Postgres>>::type_info()
    }

    fn compatible(ty: &PgTypeInfo) -> bool {
        <JsonbType as sqlx::Type<Postgres>>::compatible(ty)
    }
}

impl<'r> sqlx::Decode<'r, Postgres> for JsonText<String> {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        let binary_jsonb =
            value.format() == PgValueFormat::Binary && value.type_info().name() == "JSONB";
        let mut bytes = value.as_bytes()?;
        if binary_jsonb {
            match bytes.split_first() {
                Some((1, rest)) => bytes = rest,
                _ => return Err("unsupported jsonb format version".into()),
            }
        }
        Ok(JsonText(std::str::from_utf8(bytes)?.to_owned()))
    }
}

/// The text and the arguments of `sql`, in PostgreSQL's types.
fn bound(sql: &Sql) -> Result<(Cow<'_, str>, PgArguments), sqlx::Error> {
    Ok((Cow::Borrowed(sql.text()), arguments(sql)?))
}

/// The arguments of `sql` in PostgreSQL's types.
fn arguments(sql: &Sql) -> Result<PgArguments, sqlx::Error> {
    query::arguments(sql.args(), |out: &mut PgArguments, arg| match arg {
        Typed::Uuid(v) => out.add(v),
        Typed::Time(v) => out.add(v),
        Typed::Decimal(v) => out.add(v),
        Typed::Json(v) => out.add(v.map(JsonText)),
    })
}

impl SqlRow for PgRow {
    native_getters!();

    fn uuid(&self, column: &str) -> Result<Option<Uuid>> {
        query::get(self, column)
    }

    fn time(&self, column: &str) -> Result<Option<DateTime<Utc>>> {
        query::get(self, column)
    }

    fn decimal(&self, column: &str) -> Result<Option<Decimal>> {
        query::get(self, column)
    }

    fn json(&self, column: &str) -> Result<Option<String>> {
        Ok(query::get::<_, Option<JsonText<String>>>(self, column)?.map(|j| j.0))
    }
}

/// The [`Fault`] of a PostgreSQL error; `None` for another driver's.
fn fault(db: &dyn sqlx::error::DatabaseError) -> Option<Fault> {
    let code = db
        .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()?
        .code();
    Some(if is_transient(code) {
        Fault::Transient
    } else if matches!(code, "22021" | "22P05") {
        // character_not_in_repertoire, untranslatable_character: NUL in
        // `text` or `jsonb`.
        Fault::Unstorable
    } else {
        Fault::Other
    })
}

/// SQLSTATEs that mean "not now": connection exceptions (08…),
/// insufficient resources (53…, e.g. too many connections), operator
/// intervention (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot
/// connect now), the server's own timeouts (57014 a statement cancelled by
/// `statement_timeout`, 25P03 a session ended by
/// `idle_in_transaction_session_timeout`, 57P05 by `idle_session_timeout`),
/// and serialization failures or deadlocks that outlived the retries
/// (40001, 40P01).
fn is_transient(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("53")
        || matches!(
            code,
            "57P01" | "57P02" | "57P03" | "57014" | "25P03" | "57P05" | "40001" | "40P01"
        )
}

/// Adds `$3` to the usage of key `$2` only if the result stays within `$4`.
/// The insert branch is guarded too (`WHERE $3 <= $4`): an amount above the
/// limit on a key never charged inserts nothing. (For a key that exists that
/// filter is implied by the update's guard, usage never being negative.)
/// The guard is in the statement, so the stored usage can never pass the
/// limit whatever runs concurrently: a row that fails the `WHERE` is not
/// updated and nothing is returned.
///
/// First, in the same statement, the key's hold charges expired at `$5`
/// are deleted (`swept`) and their sum (`back`) subtracted: expired holds
/// never count. The insert reads `back` as its source, so the marks are
/// deleted (and locked) before the usage row is, the order every writer
/// takes them in (`store/sql/marks.rs`).
const CHARGE: &str = "WITH swept AS ( \
         DELETE FROM quota_mark WHERE project_id = $1 AND quota_key = $2 \
         AND window_seconds = 0 AND expires_at <= $5 RETURNING amount), \
     back AS (SELECT COALESCE(SUM(amount), 0) AS n FROM swept) \
     INSERT INTO quota_usage (project_id, quota_key, used) \
     SELECT $1, $2, $3 FROM back WHERE $3 <= $4 \
     ON CONFLICT (project_id, quota_key) \
     DO UPDATE SET used = quota_usage.used - (SELECT n FROM back) + EXCLUDED.used \
     WHERE quota_usage.used - (SELECT n FROM back) + EXCLUDED.used <= $4 \
     RETURNING used";

/// Appends `<expression of the attribute> <direction>` where the
/// expression is `template` with each `@` standing for `(v.data -> $n)`.
fn push_key(sql: &mut Sql, attribute: &str, template: &str, direction: &str) {
    let mut parts = template.split('@').peekable();
    while let Some(part) = parts.next() {
        sql.push(part);
        if parts.peek().is_some() {
            sql.push("(v.data -> ").push_bind(attribute).push(")");
        }
    }
    sql.push(direction);
}

/// `rank(attribute)`: 0 numbers, 1 strings, 2 booleans, 3 anything else
/// (null, missing, array, object).
const RANK: &str = "CASE jsonb_typeof(@) WHEN 'number' THEN 0 WHEN 'string' THEN 1 \
     WHEN 'boolean' THEN 2 ELSE 3 END";

/// The attribute as a number, or null.
const NUMBER: &str = "CASE WHEN jsonb_typeof(@) = 'number' THEN @::numeric END";
/// The attribute as a string (bytewise order), or null.
const STRING: &str = "CASE WHEN jsonb_typeof(@) = 'string' THEN @ #>> '{}' END COLLATE \"C\"";
/// The attribute as a boolean, or null.
const BOOLEAN: &str = "CASE WHEN jsonb_typeof(@) = 'boolean' THEN @::boolean END";

/// The `jsonb` documents whose containment in `data` is a match of the
/// filter `data.<attribute>=<value>`: `{"a": x}` (the attribute is `x`)
/// and `{"a": [x]}` (it is an array holding `x`), for each `x` the text can
/// equal. (An array's element that is itself an array does not contain `x`
/// in the sense of `@>`, as the filter semantics require.)
fn containment_documents(attribute: &str, value: &FilterValue<'_>) -> Result<Vec<String>> {
    let key = serde_json::to_string(attribute).map_err(Error::internal)?;
    let mut scalars = Vec::new();
    // PostgreSQL text cannot hold NUL, so no stored string has one.
    if !value.text.contains('\0') {
        scalars.push(serde_json::to_string(value.text).map_err(Error::internal)?);
    }
    if let Some(instant) = &value.instant {
        scalars.push(serde_json::to_string(instant).map_err(Error::internal)?);
    }
    if let Some(d) = value.number {
        // Decimal's Display is a plain decimal: a JSON number.
        scalars.push(d.to_string());
    }
    if let Some(b) = value.boolean {
        scalars.push(b.to_string());
    }
    let mut documents = Vec::with_capacity(2 * scalars.len());
    for x in scalars {
        documents.push(format!("{{{key}:{x}}}"));
        documents.push(format!("{{{key}:[{x}]}}"));
    }
    Ok(documents)
}

impl Dialect for PostgresStore {
    type Db = Postgres;
    type Row = PgRow;

    const WRITING_WITH: bool = true;
    const FOR_UPDATE: &'static str = " FOR UPDATE";
    const FOR_SHARE: &'static str = " FOR SHARE";
    const SKIP_LOCKED: &'static str = " FOR UPDATE SKIP LOCKED";
    const POSITION_FN: &'static str = "strpos";
    const NOT_BY_INDEX: &'static str = "";
    const MIGRATION_HISTORY: &'static str = "CREATE TABLE IF NOT EXISTS accord_migrations (
        version BIGINT PRIMARY KEY,
        description TEXT NOT NULL,
        checksum BYTEA NOT NULL,
        installed_on TIMESTAMPTZ NOT NULL DEFAULT now())";
    const NEXT_SEQ: &'static str = "SELECT nextval('consent_seq') AS last";
    const MIGRATOR: &'static sqlx::migrate::Migrator = &super::MIGRATOR;
    const WRITE_LIMIT: Option<std::time::Duration> = Some(super::WRITE_LIMIT);
    const HAS_TABLE: &'static str = "SELECT 1 AS found WHERE to_regclass($1) IS NOT NULL";
    // The clock, `CHARGED_KEYS_MARGIN` (5 s) back: concurrent writers commit
    // in any order, a key's time is taken when its row is inserted.
    const CHARGED_ORDER: &'static str = "first_charged_us";
    const CHARGED_CURSOR: &'static str = "SELECT CAST(extract(epoch FROM clock_timestamp()) \
        * 1000000 AS bigint) - 5000000 AS cursor";

    fn pool(&self) -> &sqlx::Pool<Postgres> {
        &self.pool
    }

    fn redeem_queue(&self) -> &crate::store::sql::queue::RedeemQueue {
        &self.redeems
    }

    fn group_leaders(&self) -> usize {
        self.group_leaders
    }

    run_statements!();

    /// READ COMMITTED: every guard is in a statement or a row lock.
    async fn begin_write(&self) -> Result<Tx<Self>, Abort> {
        Ok(Tx::new(self.pool.begin().await?, None))
    }

    async fn begin_read(&self) -> Result<Tx<Self>, Abort> {
        let tx = self
            .pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await?;
        Ok(Tx::new(tx, None))
    }

    /// Serialization failure (40001) or deadlock victim (40P01).
    fn fault(db: &dyn sqlx::error::DatabaseError) -> Fault {
        fault(db).unwrap_or(Fault::Other)
    }

    fn is_retryable(e: &sqlx::Error) -> bool {
        matches!(e, sqlx::Error::Database(db)
            if db.code().is_some_and(|c| c == "40001" || c == "40P01"))
    }

    fn campaign_key_violated(e: &sqlx::Error) -> Option<bool> {
        if is_unique_violation(e, "campaign_pkey") {
            Some(true)
        } else if is_unique_violation(e, "campaign_ref_code_key") {
            Some(false)
        } else {
            None
        }
    }

    async fn charge(
        conn: &mut PgConnection,
        project: &str,
        charge: &QuotaCharge,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<bool, Abort> {
        let sql = Sql::new(CHARGE)
            .bind(project)
            .bind(&charge.key)
            .bind(charge.amount)
            .bind(charge.limit)
            .bind(at);
        Ok(row::<Self>(conn, &sql).await?.is_some())
    }

    async fn release(
        conn: &mut PgConnection,
        project: &str,
        charge: &QuotaCharge,
    ) -> Result<(), Abort> {
        let sql = Sql::new(
            "UPDATE quota_usage SET used = used - $3 WHERE project_id = $1 AND quota_key = $2",
        )
        .bind(project)
        .bind(&charge.key)
        .bind(charge.amount);
        execute::<Self>(conn, &sql).await?;
        Ok(())
    }

    fn derived_content_columns(_: &Map<String, Value>) -> Result<Vec<(&'static str, Arg)>> {
        Ok(Vec::new())
    }

    fn json_text(data: &str, attribute: &'static str) -> String {
        format!("({data} ->> '{attribute}')")
    }

    fn json_is_string(data: &str, attribute: &'static str) -> String {
        format!("jsonb_typeof({data} -> '{attribute}') = 'string'")
    }

    fn push_content_filter(sql: &mut Sql, filter: &ContentFilter) -> Result<()> {
        let documents = containment_documents(&filter.attribute, &FilterValue::of(&filter.value))?;
        sql.push("(");
        if documents.is_empty() {
            sql.push("FALSE");
        }
        for (i, document) in documents.into_iter().enumerate() {
            sql.push(if i == 0 {
                "v.data @> "
            } else {
                " OR v.data @> "
            })
            .push_bind(Json(document));
        }
        sql.push(")");
        Ok(())
    }

    /// Rank 3 last whatever the direction, then the rank and the typed
    /// values (`numeric`, text `COLLATE "C"`, `boolean`) in the key's
    /// direction.
    fn push_content_sort(sql: &mut Sql, key: &ContentSort) {
        let dir = match key.direction {
            SortDirection::Asc => " ASC, ",
            SortDirection::Desc => " DESC, ",
        };
        let a = &key.attribute;
        push_key(sql, a, &format!("{RANK} = 3"), " ASC, ");
        push_key(sql, a, RANK, dir);
        push_key(sql, a, NUMBER, dir);
        push_key(sql, a, STRING, dir);
        push_key(sql, a, BOOLEAN, dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_codes() {
        assert!(is_transient("08006"));
        assert!(is_transient("57P01"));
        assert!(is_transient("40P01"));
        assert!(is_transient("57014")); // statement_timeout
        assert!(is_transient("25P03")); // idle_in_transaction_session_timeout
                                        // Digits, and 23505 & 0xff would be SQLite's BUSY: not transient.
        assert!(!is_transient("23505"));
    }
}
