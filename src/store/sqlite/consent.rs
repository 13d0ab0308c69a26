//! Content versions and purpose events in SQLite (see
//! `migrations/sqlite/0002_consent.sql`).
//!
//! Every append runs in a `BEGIN IMMEDIATE` transaction that also bumps the
//! one-row `consent_seq` counter, so `seq`s are assigned in commit order
//! across threads and processes. Lists translate
//! [`crate::core::consent::query`] into SQL over the `content_current` view:
//! filters with `json_each` (one row for a scalar, one per element for an
//! array), sorts with `json_type`, `json_extract` and the exact number keys
//! of the `number_keys` column.

use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};

use super::campaign::{col, from_micros, micros};
use super::{ledger, SqliteStore};
use crate::core::consent::ledger as consent_ledger;
use crate::core::consent::{
    AcceptanceStatus, ContentQuery, ContentRecord, ContentType, ContentWrite, PurposeEvent,
};
use crate::store::sql::calls::store_calls;
use crate::store::sql::content::{
    content_not_found, content_type_from_db, data_from_json, data_json, duplicate_content_id,
    duplicate_event_id, json_path, number_keys_json, stale_content_version, FilterValue,
};
use crate::store::sql::{db_error, limit_offset};
use crate::store::{ConsentLedger, ContentStore, Page, SortDirection};
use crate::Result;

/// The columns a [`ContentRecord`] is read from.
const CONTENT_COLUMNS: &str = "project_id, content_type, id, version, seq, data, created_by, \
     last_modified_by, created_date, last_modified_date";

/// The columns a [`PurposeEvent`] is read from.
const EVENT_COLUMNS: &str = "project_id, id, seq, data_subject, app, purpose_code, status, \
     consent_id, acceptance_date, expired_date, withdrawal_date, recorded_at";

fn record_from_row(row: &SqliteRow) -> Result<ContentRecord> {
    Ok(ContentRecord {
        id: col(row, "id")?,
        project_id: col(row, "project_id")?,
        content_type: content_type_from_db(&col::<String>(row, "content_type")?)?,
        version: col(row, "version")?,
        seq: col(row, "seq")?,
        created_by: col(row, "created_by")?,
        last_modified_by: col(row, "last_modified_by")?,
        created_date: from_micros(col(row, "created_date")?)?,
        last_modified_date: from_micros(col(row, "last_modified_date")?)?,
        data: data_from_json(&col::<String>(row, "data")?)?,
    })
}

fn records(rows: &[SqliteRow]) -> Result<Vec<ContentRecord>> {
    rows.iter().map(record_from_row).collect()
}

fn optional_time(row: &SqliteRow, name: &str) -> Result<Option<DateTime<Utc>>> {
    col::<Option<i64>>(row, name)?.map(from_micros).transpose()
}

fn event_from_row(row: &SqliteRow) -> Result<PurposeEvent> {
    Ok(PurposeEvent {
        id: col(row, "id")?,
        project_id: col(row, "project_id")?,
        data_subject: col(row, "data_subject")?,
        app: col(row, "app")?,
        purpose_code: col(row, "purpose_code")?,
        status: AcceptanceStatus::parse(&col::<String>(row, "status")?),
        consent_id: col(row, "consent_id")?,
        acceptance_date: optional_time(row, "acceptance_date")?,
        expired_date: optional_time(row, "expired_date")?,
        withdrawal_date: optional_time(row, "withdrawal_date")?,
        recorded_at: from_micros(col(row, "recorded_at")?)?,
        seq: col(row, "seq")?,
    })
}

/// Takes the next `seq`; the caller holds the write lock (`BEGIN
/// IMMEDIATE`), and rolling back gives the number back.
async fn next_seq(conn: &mut SqliteConnection) -> Result<i64> {
    sqlx::query_scalar("UPDATE consent_seq SET last = last + 1 WHERE id = 1 RETURNING last")
        .fetch_one(conn)
        .await
        .map_err(db_error)
}

/// The highest stored version of a record.
async fn current_version(conn: &mut SqliteConnection, write: &ContentWrite) -> Result<Option<i64>> {
    sqlx::query_scalar(
        "SELECT MAX(version) FROM content_version \
         WHERE project_id = ? AND content_type = ? AND id = ?",
    )
    .bind(&write.project_id)
    .bind(write.content_type.as_str())
    .bind(&write.id)
    .fetch_one(conn)
    .await
    .map_err(db_error)
}

/// Appends the list's `WHERE` clause (shared by the page and its count):
/// current versions of one type in one project, and every filter. A filter
/// runs `json_each` over the attribute — one row for a scalar, one per
/// element for an array (an object is excluded: its members are not
/// elements) — and accepts a row that is the filter's string (or its
/// instant's stored form), one of its number texts, or its boolean.
fn push_where(
    qb: &mut QueryBuilder<'_, Sqlite>,
    project: &str,
    content_type: ContentType,
    query: &ContentQuery,
) {
    qb.push(" WHERE v.project_id = ")
        .push_bind(project.to_owned())
        .push(" AND v.content_type = ")
        .push_bind(content_type.as_str());
    for filter in &query.filters {
        let path = json_path(&filter.attribute);
        let value = FilterValue::of(&filter.value);
        qb.push(" AND EXISTS (SELECT 1 FROM json_each(v.data, ")
            .push_bind(path.clone())
            .push(") j WHERE json_type(v.data, ")
            .push_bind(path)
            .push(") <> 'object' AND ((j.type = 'text' AND j.atom IN (")
            .push_bind(value.text.to_owned())
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
            qb.push(" OR (j.type IN ('integer', 'real') AND (v.data -> j.fullkey) IN (");
            let mut list = qb.separated(", ");
            for text in texts {
                list.push_bind(text);
            }
            qb.push("))");
        }
        match value.boolean {
            Some(true) => qb.push(" OR j.type = 'true'"),
            Some(false) => qb.push(" OR j.type = 'false'"),
            None => qb,
        };
        qb.push("))");
    }
}

/// Appends `rank(attribute)`: 0 numbers, 1 strings, 2 booleans, 3 anything
/// else (null, missing, array, object).
fn push_rank(qb: &mut QueryBuilder<'_, Sqlite>, path: &str) {
    qb.push("CASE json_type(v.data, ")
        .push_bind(path.to_owned())
        .push(
            ") WHEN 'integer' THEN 0 WHEN 'real' THEN 0 WHEN 'text' THEN 1 \
             WHEN 'true' THEN 2 WHEN 'false' THEN 2 ELSE 3 END",
        );
}

/// Appends the list's `ORDER BY`. Per key: rank 3 last whatever the
/// direction, then the rank and the typed value in the key's direction
/// (only one of the typed values is not null for a given rank); then
/// `createdDate` and `id`.
fn push_order_by(qb: &mut QueryBuilder<'_, Sqlite>, query: &ContentQuery) {
    qb.push(" ORDER BY ");
    for key in &query.sort {
        let path = json_path(&key.attribute);
        let dir = match key.direction {
            SortDirection::Asc => " ASC, ",
            SortDirection::Desc => " DESC, ",
        };
        push_rank(qb, &path);
        qb.push(" = 3, ");
        push_rank(qb, &path);
        qb.push(dir)
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
    qb.push("v.created_date, v.id");
}

store_calls!(impl ContentStore for SqliteStore);

/// The calls of [`ContentStore`], which `store_calls!` wraps (see
/// `crate::store::sql::calls`).
impl SqliteStore {
    async fn insert_content(&self, write: &ContentWrite) -> Result<ContentRecord> {
        let data = data_json(&write.data)?;
        let number_keys = number_keys_json(&write.data)?;
        let mut w = self.write().await?;
        let seq = next_seq(&mut w.tx).await?;
        let inserted = sqlx::query(
            "INSERT INTO content_version (project_id, content_type, id, version, seq, data, \
             number_keys, created_by, last_modified_by, created_date, last_modified_date) \
             VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (project_id, content_type, id, version) DO NOTHING",
        )
        .bind(&write.project_id)
        .bind(write.content_type.as_str())
        .bind(&write.id)
        .bind(seq)
        .bind(data)
        .bind(number_keys)
        .bind(&write.actor)
        .bind(&write.actor)
        .bind(micros(write.at))
        .bind(micros(write.at))
        .execute(&mut *w.tx)
        .await
        .map_err(db_error)?
        .rows_affected();
        if inserted == 0 {
            return Err(duplicate_content_id());
        }
        let record = ContentRecord {
            id: write.id.clone(),
            project_id: write.project_id.clone(),
            content_type: write.content_type,
            version: 1,
            seq,
            created_by: write.actor.clone(),
            last_modified_by: write.actor.clone(),
            created_date: from_micros(micros(write.at))?,
            last_modified_date: from_micros(micros(write.at))?,
            data: write.data.clone(),
        };
        if record.content_type == ContentType::ConsentAcceptance {
            ledger::append(
                &mut w.tx,
                &consent_ledger::for_acceptance(&record, consent_ledger::new_salt()),
            )
            .await?;
        }
        w.commit().await?;
        Ok(record)
    }

    async fn replace_content(
        &self,
        write: &ContentWrite,
        expected_version: i64,
    ) -> Result<ContentRecord> {
        let data = data_json(&write.data)?;
        let number_keys = number_keys_json(&write.data)?;
        let mut w = self.write().await?;
        let seq = next_seq(&mut w.tx).await?;
        // Compare and append in one statement: version n + 1 is built from
        // version n only if n is the expected version and has no successor
        // yet (the primary key refuses a second n + 1).
        let sql = format!(
            "INSERT INTO content_version (project_id, content_type, id, version, seq, data, \
             number_keys, created_by, last_modified_by, created_date, last_modified_date) \
             SELECT project_id, content_type, id, version + 1, ?, ?, ?, created_by, ?, \
             created_date, ? FROM content_version \
             WHERE project_id = ? AND content_type = ? AND id = ? AND version = ? \
             ON CONFLICT (project_id, content_type, id, version) DO NOTHING \
             RETURNING {CONTENT_COLUMNS}"
        );
        let row = sqlx::query(&sql)
            .bind(seq)
            .bind(data)
            .bind(number_keys)
            .bind(&write.actor)
            .bind(micros(write.at))
            .bind(&write.project_id)
            .bind(write.content_type.as_str())
            .bind(&write.id)
            .bind(expected_version)
            .fetch_optional(&mut *w.tx)
            .await
            .map_err(db_error)?;
        let Some(row) = row else {
            // Nothing appended (the transaction rolls back, seq included):
            // say why.
            return Err(match current_version(&mut w.tx, write).await? {
                None => content_not_found(write.content_type, &write.id),
                Some(stored) => stale_content_version(stored, expected_version),
            });
        };
        let record = record_from_row(&row)?;
        if record.content_type == ContentType::ConsentAcceptance {
            ledger::append(
                &mut w.tx,
                &consent_ledger::for_acceptance(&record, consent_ledger::new_salt()),
            )
            .await?;
        }
        w.commit().await?;
        Ok(record)
    }

    async fn content(
        &self,
        project: &str,
        content_type: ContentType,
        id: &str,
    ) -> Result<Option<ContentRecord>> {
        let sql = format!(
            "SELECT {CONTENT_COLUMNS} FROM content_version v \
             WHERE project_id = ? AND content_type = ? AND id = ? ORDER BY version DESC LIMIT 1"
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
            "SELECT {CONTENT_COLUMNS} FROM content_version v \
             WHERE project_id = ? AND content_type = ? AND id = ? ORDER BY version"
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
        let mut tx = self.read().await?;
        let mut count = QueryBuilder::<Sqlite>::new("SELECT COUNT(*) FROM content_current v");
        push_where(&mut count, project, content_type, query);
        let total: i64 = count
            .build_query_scalar()
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;

        let (limit, offset) = limit_offset(query.page, query.size);
        let mut select =
            QueryBuilder::<Sqlite>::new(format!("SELECT {CONTENT_COLUMNS} FROM content_current v"));
        push_where(&mut select, project, content_type, query);
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

store_calls!(impl ConsentLedger for SqliteStore);

/// The calls of [`ConsentLedger`], which `store_calls!` wraps (see
/// `crate::store::sql::calls`).
impl SqliteStore {
    async fn consents_of_app(&self, project: &str, app: &str) -> Result<Vec<ContentRecord>> {
        // The expression of content_version_application_idx; json_type
        // keeps out numbers and arrays whose SQL value equals the text. The
        // unary `+` stops the planner from walking the list index for its
        // order (its choice on a database without ANALYZE statistics),
        // which would read every consent of the project.
        let sql = format!(
            "SELECT {CONTENT_COLUMNS} FROM content_current v \
             WHERE v.project_id = ? AND v.content_type = ? \
             AND json_extract(v.data, '$.application') = ? \
             AND json_type(v.data, '$.application') = 'text' \
             ORDER BY +v.created_date, v.id"
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
            "SELECT {CONTENT_COLUMNS} FROM content_version v \
             WHERE v.project_id = ? AND v.content_type = ? \
             AND json_extract(v.data, '$.dataSubject') = ? \
             AND json_type(v.data, '$.dataSubject') = 'text' \
             ORDER BY v.seq"
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
        let mut qb = QueryBuilder::<Sqlite>::new(format!(
            "SELECT {CONTENT_COLUMNS} FROM content_current v WHERE v.project_id = "
        ));
        qb.push_bind(project.to_owned())
            .push(" AND v.content_type = ")
            .push_bind(ContentType::Purpose.as_str())
            .push(" AND json_type(v.data, '$.code') = 'text'")
            .push(" AND json_extract(v.data, '$.code') IN (");
        let mut list = qb.separated(", ");
        for code in codes {
            list.push_bind(code.clone());
        }
        qb.push(") ORDER BY v.last_modified_date, v.seq");
        let rows = qb.build().fetch_all(self.pool()).await.map_err(db_error)?;
        records(&rows)
    }

    async fn append_purpose_event(&self, event: &PurposeEvent) -> Result<PurposeEvent> {
        let mut w = self.write().await?;
        let seq = next_seq(&mut w.tx).await?;
        let inserted = sqlx::query(
            "INSERT INTO purpose_event (project_id, id, seq, data_subject, app, purpose_code, \
             status, consent_id, acceptance_date, expired_date, withdrawal_date, recorded_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (project_id, id) DO NOTHING",
        )
        .bind(&event.project_id)
        .bind(&event.id)
        .bind(seq)
        .bind(&event.data_subject)
        .bind(&event.app)
        .bind(&event.purpose_code)
        .bind(event.status.as_str())
        .bind(&event.consent_id)
        .bind(event.acceptance_date.map(micros))
        .bind(event.expired_date.map(micros))
        .bind(event.withdrawal_date.map(micros))
        .bind(micros(event.recorded_at))
        .execute(&mut *w.tx)
        .await
        .map_err(db_error)?
        .rows_affected();
        if inserted == 0 {
            return Err(duplicate_event_id());
        }
        let as_stored = |t: DateTime<Utc>| from_micros(micros(t));
        let stored = PurposeEvent {
            seq,
            acceptance_date: event.acceptance_date.map(as_stored).transpose()?,
            expired_date: event.expired_date.map(as_stored).transpose()?,
            withdrawal_date: event.withdrawal_date.map(as_stored).transpose()?,
            recorded_at: as_stored(event.recorded_at)?,
            ..event.clone()
        };
        ledger::append(
            &mut w.tx,
            &consent_ledger::for_purpose_event(&stored, consent_ledger::new_salt()),
        )
        .await?;
        w.commit().await?;
        Ok(stored)
    }

    async fn purpose_events(
        &self,
        project: &str,
        subject: &str,
        app: Option<&str>,
    ) -> Result<Vec<PurposeEvent>> {
        let mut qb = QueryBuilder::<Sqlite>::new(format!(
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
