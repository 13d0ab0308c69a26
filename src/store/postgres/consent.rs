//! Content versions and purpose events in PostgreSQL (see
//! `migrations/postgres/0002_consent.sql`).
//!
//! Every append is one statement: `seq` comes from the `consent_seq`
//! sequence (the column default of both tables), a replace is an
//! `INSERT … SELECT` from the expected version that the primary key lets
//! through once. A single-row statement at READ COMMITTED waits on at most
//! one other writer, so it cannot be a deadlock victim and needs no
//! [`retry`](super::retry). Lists translate [`crate::core::consent::query`] into SQL over the
//! `content_current` view: filters as `jsonb` containment (served by the
//! GIN index), sorts on the typed values (`numeric`, text `COLLATE "C"`,
//! `boolean`).

use sqlx::postgres::PgRow;
use sqlx::{PgConnection, PgExecutor, Postgres, QueryBuilder};

use super::campaign::col;
use super::{ledger, PostgresStore};
use crate::core::consent::ledger as consent_ledger;
use crate::core::consent::{
    AcceptanceStatus, ContentQuery, ContentRecord, ContentType, ContentWrite, PurposeEvent,
};
use crate::store::sql::calls::store_calls;
use crate::store::sql::content::{
    content_not_found, content_type_from_db, data_from_json, data_json, duplicate_content_id,
    duplicate_event_id, stale_content_version, FilterValue,
};
use crate::store::sql::{db_error, limit_offset};
use crate::store::{ConsentLedger, ContentStore, Page, SortDirection};
use crate::{Error, Result};

/// The columns a [`ContentRecord`] is read from; `data` as text.
const CONTENT_COLUMNS: &str = "project_id, content_type, id, version, seq, data::text AS data, \
     created_by, last_modified_by, created_date, last_modified_date";

/// The columns a [`PurposeEvent`] is read from.
const EVENT_COLUMNS: &str = "project_id, id, seq, data_subject, app, purpose_code, status, \
     consent_id, acceptance_date, expired_date, withdrawal_date, recorded_at";

fn record_from_row(row: &PgRow) -> Result<ContentRecord> {
    Ok(ContentRecord {
        id: col(row, "id")?,
        project_id: col(row, "project_id")?,
        content_type: content_type_from_db(&col::<String>(row, "content_type")?)?,
        version: col(row, "version")?,
        seq: col(row, "seq")?,
        created_by: col(row, "created_by")?,
        last_modified_by: col(row, "last_modified_by")?,
        created_date: col(row, "created_date")?,
        last_modified_date: col(row, "last_modified_date")?,
        data: data_from_json(&col::<String>(row, "data")?)?,
    })
}

fn records(rows: &[PgRow]) -> Result<Vec<ContentRecord>> {
    rows.iter().map(record_from_row).collect()
}

fn event_from_row(row: &PgRow) -> Result<PurposeEvent> {
    Ok(PurposeEvent {
        id: col(row, "id")?,
        project_id: col(row, "project_id")?,
        data_subject: col(row, "data_subject")?,
        app: col(row, "app")?,
        purpose_code: col(row, "purpose_code")?,
        status: AcceptanceStatus::parse(&col::<String>(row, "status")?),
        consent_id: col(row, "consent_id")?,
        acceptance_date: col(row, "acceptance_date")?,
        expired_date: col(row, "expired_date")?,
        withdrawal_date: col(row, "withdrawal_date")?,
        recorded_at: col(row, "recorded_at")?,
        seq: col(row, "seq")?,
    })
}

/// The highest stored version of a record.
async fn current_version<'e>(
    executor: impl PgExecutor<'e>,
    write: &ContentWrite,
) -> Result<Option<i64>> {
    sqlx::query_scalar(
        "SELECT MAX(version) FROM content_version \
         WHERE project_id = $1 AND content_type = $2 AND id = $3",
    )
    .bind(&write.project_id)
    .bind(write.content_type.as_str())
    .bind(&write.id)
    .fetch_one(executor)
    .await
    .map_err(db_error)
}

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

/// Appends the list's `WHERE` clause (shared by the page and its count):
/// current versions of one type in one project, and every filter.
fn push_where(
    qb: &mut QueryBuilder<'_, Postgres>,
    project: &str,
    content_type: ContentType,
    query: &ContentQuery,
) -> Result<()> {
    qb.push(" WHERE project_id = ")
        .push_bind(project.to_owned())
        .push(" AND content_type = ")
        .push_bind(content_type.as_str());
    for filter in &query.filters {
        let documents = containment_documents(&filter.attribute, &FilterValue::of(&filter.value))?;
        qb.push(" AND (");
        if documents.is_empty() {
            qb.push("FALSE");
        }
        let mut any = qb.separated(" OR ");
        for document in documents {
            any.push("data @> ")
                .push_bind_unseparated(document)
                .push_unseparated("::jsonb");
        }
        qb.push(")");
    }
    Ok(())
}

/// Appends `<expression of the attribute> <direction>` where the
/// expression is `template` with each `@` standing for `(data -> $n)`.
fn push_key(qb: &mut QueryBuilder<'_, Postgres>, attribute: &str, template: &str, direction: &str) {
    let mut parts = template.split('@').peekable();
    while let Some(part) = parts.next() {
        qb.push(part);
        if parts.peek().is_some() {
            qb.push("(data -> ")
                .push_bind(attribute.to_owned())
                .push(")");
        }
    }
    qb.push(direction);
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

/// Appends the list's `ORDER BY`. Per key: rank 3 last whatever the
/// direction, then the rank and the typed value in the key's direction
/// (only one of the typed values is not null for a given rank); then
/// `createdDate` and `id`.
fn push_order_by(qb: &mut QueryBuilder<'_, Postgres>, query: &ContentQuery) {
    qb.push(" ORDER BY ");
    for key in &query.sort {
        let dir = match key.direction {
            SortDirection::Asc => " ASC, ",
            SortDirection::Desc => " DESC, ",
        };
        let a = &key.attribute;
        push_key(qb, a, &format!("{RANK} = 3"), " ASC, ");
        push_key(qb, a, RANK, dir);
        push_key(qb, a, NUMBER, dir);
        push_key(qb, a, STRING, dir);
        push_key(qb, a, BOOLEAN, dir);
    }
    qb.push("created_date, id");
}

/// Appends the ledger entry of an acceptance version inside the write's
/// transaction (other content types have none).
async fn append_acceptance(conn: &mut PgConnection, record: &ContentRecord) -> Result<()> {
    if record.content_type != ContentType::ConsentAcceptance {
        return Ok(());
    }
    ledger::append(
        conn,
        &consent_ledger::for_acceptance(record, consent_ledger::new_salt()),
    )
    .await
}

store_calls!(impl ContentStore for PostgresStore);

/// The calls of [`ContentStore`], which `store_calls!` wraps (see
/// `crate::store::sql::calls`).
impl PostgresStore {
    async fn insert_content(&self, write: &ContentWrite) -> Result<ContentRecord> {
        let sql = format!(
            "INSERT INTO content_version (project_id, content_type, id, version, data, \
             created_by, last_modified_by, created_date, last_modified_date) \
             VALUES ($1, $2, $3, 1, $4::jsonb, $5, $5, $6, $6) \
             ON CONFLICT (project_id, content_type, id, version) DO NOTHING \
             RETURNING {CONTENT_COLUMNS}"
        );
        let mut tx = self.pool().begin().await.map_err(db_error)?;
        let row = sqlx::query(&sql)
            .bind(&write.project_id)
            .bind(write.content_type.as_str())
            .bind(&write.id)
            .bind(data_json(&write.data)?)
            .bind(&write.actor)
            .bind(write.at)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
        let Some(row) = row else {
            return Err(duplicate_content_id());
        };
        let record = record_from_row(&row)?;
        append_acceptance(&mut tx, &record).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(record)
    }

    async fn replace_content(
        &self,
        write: &ContentWrite,
        expected_version: i64,
    ) -> Result<ContentRecord> {
        // Compare and append in one statement: version n + 1 is built from
        // version n only if n is the expected version and has no successor.
        // A concurrent writer inserting the same n + 1 makes this one wait
        // for its commit, then do nothing.
        let sql = format!(
            "INSERT INTO content_version (project_id, content_type, id, version, data, \
             created_by, last_modified_by, created_date, last_modified_date) \
             SELECT project_id, content_type, id, version + 1, $1::jsonb, created_by, $2, \
             created_date, $3 FROM content_version \
             WHERE project_id = $4 AND content_type = $5 AND id = $6 AND version = $7 \
             ON CONFLICT (project_id, content_type, id, version) DO NOTHING \
             RETURNING {CONTENT_COLUMNS}"
        );
        let mut tx = self.pool().begin().await.map_err(db_error)?;
        let row = sqlx::query(&sql)
            .bind(data_json(&write.data)?)
            .bind(&write.actor)
            .bind(write.at)
            .bind(&write.project_id)
            .bind(write.content_type.as_str())
            .bind(&write.id)
            .bind(expected_version)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
        if let Some(row) = row {
            let record = record_from_row(&row)?;
            append_acceptance(&mut tx, &record).await?;
            tx.commit().await.map_err(db_error)?;
            return Ok(record);
        }
        drop(tx);
        // Nothing appended: say why. (Versions are never removed, so what
        // this read finds is at least as new as what the insert saw.)
        Err(match current_version(self.pool(), write).await? {
            None => content_not_found(write.content_type, &write.id),
            Some(stored) => stale_content_version(stored, expected_version),
        })
    }

    async fn content(
        &self,
        project: &str,
        content_type: ContentType,
        id: &str,
    ) -> Result<Option<ContentRecord>> {
        let sql = format!(
            "SELECT {CONTENT_COLUMNS} FROM content_version \
             WHERE project_id = $1 AND content_type = $2 AND id = $3 \
             ORDER BY version DESC LIMIT 1"
        );
        sqlx::query(&sql)
            .bind(project)
            .bind(content_type.as_str())
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .map_err(db_error)?
            .as_ref()
            .map(record_from_row)
            .transpose()
    }

    async fn content_versions(
        &self,
        project: &str,
        content_type: ContentType,
        id: &str,
    ) -> Result<Vec<ContentRecord>> {
        let sql = format!(
            "SELECT {CONTENT_COLUMNS} FROM content_version \
             WHERE project_id = $1 AND content_type = $2 AND id = $3 ORDER BY version"
        );
        let rows = sqlx::query(&sql)
            .bind(project)
            .bind(content_type.as_str())
            .bind(id)
            .fetch_all(self.pool())
            .await
            .map_err(db_error)?;
        records(&rows)
    }

    async fn list_content(
        &self,
        project: &str,
        content_type: ContentType,
        query: &ContentQuery,
    ) -> Result<Page<ContentRecord>> {
        // One snapshot for the page and its total.
        let mut tx = self
            .pool()
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await
            .map_err(db_error)?;
        let mut count = QueryBuilder::<Postgres>::new("SELECT COUNT(*) FROM content_current");
        push_where(&mut count, project, content_type, query)?;
        let total: i64 = count
            .build_query_scalar()
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;

        let (limit, offset) = limit_offset(query.page, query.size);
        let mut select =
            QueryBuilder::<Postgres>::new(format!("SELECT {CONTENT_COLUMNS} FROM content_current"));
        push_where(&mut select, project, content_type, query)?;
        push_order_by(&mut select, query);
        select
            .push(" LIMIT ")
            .push_bind(limit)
            .push(" OFFSET ")
            .push_bind(offset);
        let rows = select.build().fetch_all(&mut *tx).await.map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(Page {
            items: records(&rows)?,
            page: query.page,
            size: query.size,
            total: u64::try_from(total).unwrap_or_default(),
        })
    }
}

store_calls!(impl ConsentLedger for PostgresStore);

/// The calls of [`ConsentLedger`], which `store_calls!` wraps (see
/// `crate::store::sql::calls`).
impl PostgresStore {
    async fn consents_of_app(&self, project: &str, app: &str) -> Result<Vec<ContentRecord>> {
        // The expression of content_version_application_idx; jsonb_typeof
        // keeps out numbers, whose ->> text could equal `app`.
        let sql = format!(
            "SELECT {CONTENT_COLUMNS} FROM content_current \
             WHERE project_id = $1 AND content_type = $2 AND (data ->> 'application') = $3 \
             AND jsonb_typeof(data -> 'application') = 'string' \
             ORDER BY created_date, id"
        );
        let rows = sqlx::query(&sql)
            .bind(project)
            .bind(ContentType::Consent.as_str())
            .bind(app)
            .fetch_all(self.pool())
            .await
            .map_err(db_error)?;
        records(&rows)
    }

    async fn acceptance_versions(
        &self,
        project: &str,
        subject: &str,
    ) -> Result<Vec<ContentRecord>> {
        let sql = format!(
            "SELECT {CONTENT_COLUMNS} FROM content_version \
             WHERE project_id = $1 AND content_type = $2 AND (data ->> 'dataSubject') = $3 \
             AND jsonb_typeof(data -> 'dataSubject') = 'string' \
             ORDER BY seq"
        );
        let rows = sqlx::query(&sql)
            .bind(project)
            .bind(ContentType::ConsentAcceptance.as_str())
            .bind(subject)
            .fetch_all(self.pool())
            .await
            .map_err(db_error)?;
        records(&rows)
    }

    async fn purpose_names(&self, project: &str, codes: &[String]) -> Result<Vec<ContentRecord>> {
        if codes.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {CONTENT_COLUMNS} FROM content_current \
             WHERE project_id = $1 AND content_type = $2 AND (data ->> 'code') = ANY($3) \
             AND jsonb_typeof(data -> 'code') = 'string' \
             ORDER BY last_modified_date, seq"
        );
        let rows = sqlx::query(&sql)
            .bind(project)
            .bind(ContentType::Purpose.as_str())
            .bind(codes)
            .fetch_all(self.pool())
            .await
            .map_err(db_error)?;
        records(&rows)
    }

    async fn append_purpose_event(&self, event: &PurposeEvent) -> Result<PurposeEvent> {
        let sql = format!(
            "INSERT INTO purpose_event (project_id, id, data_subject, app, purpose_code, status, \
             consent_id, acceptance_date, expired_date, withdrawal_date, recorded_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
             ON CONFLICT (project_id, id) DO NOTHING \
             RETURNING {EVENT_COLUMNS}"
        );
        let mut tx = self.pool().begin().await.map_err(db_error)?;
        let row = sqlx::query(&sql)
            .bind(&event.project_id)
            .bind(&event.id)
            .bind(&event.data_subject)
            .bind(&event.app)
            .bind(&event.purpose_code)
            .bind(event.status.as_str())
            .bind(&event.consent_id)
            .bind(event.acceptance_date)
            .bind(event.expired_date)
            .bind(event.withdrawal_date)
            .bind(event.recorded_at)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
        let Some(row) = row else {
            return Err(duplicate_event_id());
        };
        let stored = event_from_row(&row)?;
        ledger::append(
            &mut tx,
            &consent_ledger::for_purpose_event(&stored, consent_ledger::new_salt()),
        )
        .await?;
        tx.commit().await.map_err(db_error)?;
        Ok(stored)
    }

    async fn purpose_events(
        &self,
        project: &str,
        subject: &str,
        app: Option<&str>,
    ) -> Result<Vec<PurposeEvent>> {
        let mut qb = QueryBuilder::<Postgres>::new(format!(
            "SELECT {EVENT_COLUMNS} FROM purpose_event WHERE project_id = "
        ));
        qb.push_bind(project.to_owned())
            .push(" AND data_subject = ")
            .push_bind(subject.to_owned());
        if let Some(app) = app {
            qb.push(" AND app = ").push_bind(app.to_owned());
        }
        qb.push(" ORDER BY seq");
        let rows = qb.build().fetch_all(self.pool()).await.map_err(db_error)?;
        rows.iter().map(event_from_row).collect()
    }
}
