//! Content versions and purpose events, for every SQL dialect (see
//! `migrations/*/0002_consent.sql`).
//!
//! Every append takes the next consent `seq` ([`Dialect::NEXT_SEQ`]) in
//! its write transaction, so `seq`s follow one store-wide order; a replace
//! is an `INSERT … SELECT` from the expected version that the primary key
//! lets through once; an acceptance version and its ledger entry are one
//! transaction. Lists translate [`crate::core::consent::query`] into SQL over
//! the `content_current` view, each filter and sort key through the
//! dialect's JSON access ([`Dialect::push_content_filter`],
//! [`Dialect::push_content_sort`]).

use super::content::{
    content_not_found, data_json, duplicate_content_id, duplicate_event_id, stale_content_version,
};
use super::dialect::{acquire, next_seq, retry, row, rows, Abort, Conn, Dialect};
use super::history;
use super::ledger;
use super::limit_offset;
use super::query::{Json, Sql, SqlRow};
use super::records::{
    event_from_row, record_from_row, records, versions_sql, CONTENT_COLUMNS, EVENT_COLUMNS,
};
use crate::core::consent::ledger as consent_ledger;
use crate::core::consent::receipt::EntryRef;
use crate::core::consent::{ContentQuery, ContentRecord, ContentType, ContentWrite, PurposeEvent};
use crate::core::outbox::OutboxEvent;
use crate::store::{ledger_switch, Page};
use crate::Result;

/// Reads rows of `sql` (a read outside any transaction) with `map`.
async fn read<D: Dialect, T>(db: &D, sql: &Sql, map: impl Fn(&[D::Row]) -> Result<T>) -> Result<T> {
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        Ok(map(&rows::<D>(&mut conn, sql).await?)?)
    })
    .await
}

/// Appends the ledger entry of an acceptance version inside the write's
/// transaction (other content types have none); what a receipt needs of
/// it.
async fn append_acceptance<D: Dialect>(
    conn: &mut Conn<D>,
    record: &ContentRecord,
) -> Result<Option<EntryRef>, Abort> {
    if record.content_type != ContentType::ConsentAcceptance || !ledger_switch::on() {
        return Ok(None);
    }
    let entry = consent_ledger::for_acceptance(record, consent_ledger::new_salt());
    Ok(Some(ledger::append::<D>(conn, &entry).await?))
}

/// The highest stored version of a record.
async fn current_version<D: Dialect>(
    conn: &mut Conn<D>,
    write: &ContentWrite,
) -> Result<Option<i64>, Abort> {
    let sql = Sql::new(
        "SELECT MAX(version) AS v FROM content_version \
         WHERE project_id = $1 AND content_type = $2 AND id = $3",
    )
    .bind(&write.project_id)
    .bind(write.content_type.as_str())
    .bind(&write.id);
    match row::<D>(conn, &sql).await? {
        Some(row) => Ok(row.col("v")?),
        None => Ok(None),
    }
}

/// The names of the dialect's derived columns of a version, each with a
/// leading `, `, and their values bound into `sql` in order.
fn derived_columns<D: Dialect>(sql: &mut Sql, write: &ContentWrite) -> Result<String> {
    let mut names = String::new();
    for (name, value) in D::derived_content_columns(&write.data)? {
        names.push_str(", ");
        names.push_str(name);
        sql.push(", ").push_bind(value);
    }
    Ok(names)
}

async fn try_insert<D: Dialect>(
    db: &D,
    write: &ContentWrite,
) -> Result<(ContentRecord, Option<EntryRef>), Abort> {
    let mut tx = db.begin_write().await?;
    let seq = next_seq::<D>(tx.conn()).await?;
    let mut values = Sql::new("VALUES ($1, $2, $3, 1, $4, $5, $6, $6, $7, $7")
        .bind(&write.project_id)
        .bind(write.content_type.as_str())
        .bind(&write.id)
        .bind(seq)
        .bind(Json(data_json(&write.data)?))
        .bind(&write.actor)
        .bind(write.at);
    let derived = derived_columns::<D>(&mut values, write)?;
    values.prepend(&format!(
        "INSERT INTO content_version (project_id, content_type, id, version, seq, data, \
         created_by, last_modified_by, created_date, last_modified_date{derived}) "
    ));
    let sql = values.push(&format!(
        ") ON CONFLICT (project_id, content_type, id, version) DO NOTHING \
         RETURNING {CONTENT_COLUMNS}"
    ));
    let Some(row) = row::<D>(tx.conn(), sql).await? else {
        return Err(Abort::Fail(duplicate_content_id()));
    };
    let record = record_from_row(&row)?;
    let entry = append_acceptance::<D>(tx.conn(), &record).await?;
    history::after_content::<D>(tx.conn(), &record).await?;
    if let Some(event) = OutboxEvent::for_acceptance(&record) {
        super::outbox::append::<D>(tx.conn(), &event).await?;
    }
    tx.commit().await?;
    Ok((record, entry))
}

async fn try_replace<D: Dialect>(
    db: &D,
    write: &ContentWrite,
    expected_version: i64,
) -> Result<ContentRecord, Abort> {
    let mut tx = db.begin_write().await?;
    let seq = next_seq::<D>(tx.conn()).await?;
    // Compare and append in one statement: version n + 1 is built from
    // version n only if n is the expected version and has no successor
    // yet (the primary key refuses a second n + 1; in PostgreSQL a
    // concurrent writer inserting the same n + 1 makes this one wait for
    // its commit, then do nothing).
    let mut values = Sql::new(
        "SELECT project_id, content_type, id, version + 1, $1, $2, created_by, $3, \
         created_date, $4",
    )
    .bind(seq)
    .bind(Json(data_json(&write.data)?))
    .bind(&write.actor)
    .bind(write.at);
    let derived = derived_columns::<D>(&mut values, write)?;
    values.prepend(&format!(
        "INSERT INTO content_version (project_id, content_type, id, version, seq, data, \
         created_by, last_modified_by, created_date, last_modified_date{derived}) "
    ));
    let sql = values
        .push(" FROM content_version WHERE project_id = ")
        .push_bind(&write.project_id)
        .push(" AND content_type = ")
        .push_bind(write.content_type.as_str())
        .push(" AND id = ")
        .push_bind(&write.id)
        .push(" AND version = ")
        .push_bind(expected_version)
        .push(&format!(
            " ON CONFLICT (project_id, content_type, id, version) DO NOTHING \
             RETURNING {CONTENT_COLUMNS}"
        ));
    let Some(row) = row::<D>(tx.conn(), sql).await? else {
        // Nothing appended (the transaction rolls back, seq included): say
        // why. (Versions are never removed, so what this read finds is at
        // least as new as what the insert saw.)
        return Err(Abort::Fail(
            match current_version::<D>(tx.conn(), write).await? {
                None => content_not_found(write.content_type, &write.id),
                Some(stored) => stale_content_version(stored, expected_version),
            },
        ));
    };
    let record = record_from_row(&row)?;
    append_acceptance::<D>(tx.conn(), &record).await?;
    history::after_content::<D>(tx.conn(), &record).await?;
    if let Some(event) = OutboxEvent::for_acceptance(&record) {
        super::outbox::append::<D>(tx.conn(), &event).await?;
    }
    tx.commit().await?;
    Ok(record)
}

/// Appends the list's `WHERE` clause (shared by the page and its count):
/// current versions of one type in one project, and every filter.
fn push_where<D: Dialect>(
    sql: &mut Sql,
    project: &str,
    content_type: ContentType,
    query: &ContentQuery,
) -> Result<()> {
    sql.push(" WHERE v.project_id = ")
        .push_bind(project)
        .push(" AND v.content_type = ")
        .push_bind(content_type.as_str());
    for filter in &query.filters {
        sql.push(" AND ");
        D::push_content_filter(sql, filter)?;
    }
    Ok(())
}

async fn try_list<D: Dialect>(
    db: &D,
    project: &str,
    content_type: ContentType,
    query: &ContentQuery,
) -> Result<Page<ContentRecord>, Abort> {
    // One snapshot for the page and its total.
    let mut tx = db.begin_read().await?;
    let mut count = Sql::new("SELECT COUNT(*) AS n FROM content_current v");
    push_where::<D>(&mut count, project, content_type, query)?;
    let total: i64 = match row::<D>(tx.conn(), &count).await? {
        Some(row) => row.col("n")?,
        None => 0,
    };
    let (limit, offset) = limit_offset(query.page, query.size);
    let mut select = Sql::new(format!("SELECT {CONTENT_COLUMNS} FROM content_current v"));
    push_where::<D>(&mut select, project, content_type, query)?;
    // Per key, the dialect's terms; then `createdDate` and `id`.
    select.push(" ORDER BY ");
    for key in &query.sort {
        D::push_content_sort(&mut select, key);
    }
    select
        .push("v.created_date, v.id LIMIT ")
        .push_bind(limit)
        .push(" OFFSET ")
        .push_bind(offset);
    let rows = rows::<D>(tx.conn(), &select).await?;
    tx.commit().await?;
    Ok(Page {
        items: records(&rows)?,
        page: query.page,
        size: query.size,
        total: u64::try_from(total).unwrap_or_default(),
    })
}

async fn try_append_event<D: Dialect>(db: &D, event: &PurposeEvent) -> Result<PurposeEvent, Abort> {
    let mut tx = db.begin_write().await?;
    let seq = next_seq::<D>(tx.conn()).await?;
    let sql = Sql::new(format!(
        "INSERT INTO purpose_event (project_id, id, seq, data_subject, app, purpose_code, \
         status, consent_id, acceptance_date, expired_date, withdrawal_date, recorded_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
         ON CONFLICT (project_id, id) DO NOTHING \
         RETURNING {EVENT_COLUMNS}"
    ))
    .bind(&event.project_id)
    .bind(&event.id)
    .bind(seq)
    .bind(&event.data_subject)
    .bind(&event.app)
    .bind(&event.purpose_code)
    .bind(event.status.as_str())
    .bind(&event.consent_id)
    .bind(event.acceptance_date)
    .bind(event.expired_date)
    .bind(event.withdrawal_date)
    .bind(event.recorded_at);
    let Some(row) = row::<D>(tx.conn(), &sql).await? else {
        return Err(Abort::Fail(duplicate_event_id()));
    };
    let stored = event_from_row(&row)?;
    ledger::append::<D>(
        tx.conn(),
        &consent_ledger::for_purpose_event(&stored, consent_ledger::new_salt()),
    )
    .await?;
    history::after_purpose_event::<D>(tx.conn(), &stored).await?;
    super::outbox::append::<D>(tx.conn(), &OutboxEvent::for_purpose_event(&stored)).await?;
    tx.commit().await?;
    Ok(stored)
}

/// [`ContentStore::insert_content`](crate::store::ContentStore::insert_content).
pub(crate) async fn insert_content<D: Dialect>(
    db: &D,
    write: &ContentWrite,
) -> Result<ContentRecord> {
    Ok(insert_content_with_entry(db, write).await?.0)
}

/// [`ContentStore::insert_content_with_entry`](crate::store::ContentStore::insert_content_with_entry).
pub(crate) async fn insert_content_with_entry<D: Dialect>(
    db: &D,
    write: &ContentWrite,
) -> Result<(ContentRecord, Option<EntryRef>)> {
    // Boxed: the transaction's future (version, ledger, history, outbox)
    // would otherwise sit inside every caller's future.
    Box::pin(retry::<D, _, _, _>(|| try_insert(db, write))).await
}

/// [`ContentStore::replace_content`](crate::store::ContentStore::replace_content).
pub(crate) async fn replace_content<D: Dialect>(
    db: &D,
    write: &ContentWrite,
    expected_version: i64,
) -> Result<ContentRecord> {
    retry::<D, _, _, _>(|| try_replace(db, write, expected_version)).await
}

/// [`ContentStore::content`](crate::store::ContentStore::content).
pub(crate) async fn content<D: Dialect>(
    db: &D,
    project: &str,
    content_type: ContentType,
    id: &str,
) -> Result<Option<ContentRecord>> {
    let sql = Sql::new(format!(
        "SELECT {CONTENT_COLUMNS} FROM content_version v \
         WHERE project_id = $1 AND content_type = $2 AND id = $3 ORDER BY version DESC LIMIT 1"
    ))
    .bind(project)
    .bind(content_type.as_str())
    .bind(id);
    read(db, &sql, |rows| {
        rows.first().map(record_from_row).transpose()
    })
    .await
}

/// [`ContentStore::content_versions`](crate::store::ContentStore::content_versions).
pub(crate) async fn content_versions<D: Dialect>(
    db: &D,
    project: &str,
    content_type: ContentType,
    id: &str,
) -> Result<Vec<ContentRecord>> {
    read(db, &versions_sql(project, content_type, id), records).await
}

/// [`ContentStore::list_content`](crate::store::ContentStore::list_content).
pub(crate) async fn list_content<D: Dialect>(
    db: &D,
    project: &str,
    content_type: ContentType,
    query: &ContentQuery,
) -> Result<Page<ContentRecord>> {
    retry::<D, _, _, _>(|| try_list(db, project, content_type, query)).await
}

/// [`ConsentLedger::consents_of_app`](crate::store::ConsentLedger::consents_of_app).
pub(crate) async fn consents_of_app<D: Dialect>(
    db: &D,
    project: &str,
    app: &str,
) -> Result<Vec<ContentRecord>> {
    // The expression of content_version_application_idx; the type test
    // keeps out numbers and arrays whose text equals `app`.
    let sql = Sql::new(format!(
        "SELECT {CONTENT_COLUMNS} FROM content_current v \
         WHERE v.project_id = $1 AND v.content_type = $2 AND {} = $3 AND {} \
         ORDER BY {}v.created_date, v.id",
        D::json_text("v.data", "application"),
        D::json_is_string("v.data", "application"),
        D::NOT_BY_INDEX,
    ))
    .bind(project)
    .bind(ContentType::Consent.as_str())
    .bind(app);
    read(db, &sql, records).await
}

/// [`ConsentLedger::acceptance_versions`](crate::store::ConsentLedger::acceptance_versions).
pub(crate) async fn acceptance_versions<D: Dialect>(
    db: &D,
    project: &str,
    subject: &str,
) -> Result<Vec<ContentRecord>> {
    let sql = Sql::new(format!(
        "SELECT {CONTENT_COLUMNS} FROM content_version v \
         WHERE v.project_id = $1 AND v.content_type = $2 AND {} = $3 AND {} \
         ORDER BY v.seq",
        D::json_text("v.data", "dataSubject"),
        D::json_is_string("v.data", "dataSubject"),
    ))
    .bind(project)
    .bind(ContentType::ConsentAcceptance.as_str())
    .bind(subject);
    read(db, &sql, records).await
}

/// [`ConsentLedger::purpose_names`](crate::store::ConsentLedger::purpose_names).
pub(crate) async fn purpose_names<D: Dialect>(
    db: &D,
    project: &str,
    codes: &[String],
) -> Result<Vec<ContentRecord>> {
    if codes.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(format!(
        "SELECT {CONTENT_COLUMNS} FROM content_current v \
         WHERE v.project_id = $1 AND v.content_type = $2 AND {} AND {} IN (",
        D::json_is_string("v.data", "code"),
        D::json_text("v.data", "code"),
    ))
    .bind(project)
    .bind(ContentType::Purpose.as_str());
    sql.push_list(codes)
        .push(") ORDER BY v.last_modified_date, v.seq");
    read(db, &sql, records).await
}

/// [`ConsentLedger::append_purpose_event`](crate::store::ConsentLedger::append_purpose_event).
pub(crate) async fn append_purpose_event<D: Dialect>(
    db: &D,
    event: &PurposeEvent,
) -> Result<PurposeEvent> {
    retry::<D, _, _, _>(|| try_append_event(db, event)).await
}

/// [`ConsentLedger::purpose_events`](crate::store::ConsentLedger::purpose_events).
pub(crate) async fn purpose_events<D: Dialect>(
    db: &D,
    project: &str,
    subject: &str,
    app: Option<&str>,
) -> Result<Vec<PurposeEvent>> {
    let mut sql = Sql::new(format!(
        "SELECT {EVENT_COLUMNS} FROM purpose_event WHERE project_id = $1 AND data_subject = $2"
    ))
    .bind(project)
    .bind(subject);
    if let Some(app) = app {
        sql.push(" AND app = ").push_bind(app);
    }
    sql.push(" ORDER BY seq");
    read(db, &sql, |rows| rows.iter().map(event_from_row).collect()).await
}
