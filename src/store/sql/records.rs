//! Reading content versions and purpose events from rows, shared by the
//! consent store (`consent.rs`) and the history kept beside it
//! (`history.rs`).

use super::content::{content_type_from_db, data_from_json};
use super::dialect::{rows, Abort, Conn, Dialect};
use super::query::{Json, Sql, SqlRow};
use crate::core::consent::{AcceptanceStatus, ContentRecord, ContentType, PurposeEvent};
use crate::Result;

/// The columns a [`ContentRecord`] is read from.
pub(crate) const CONTENT_COLUMNS: &str =
    "project_id, content_type, id, version, seq, data, created_by, \
     last_modified_by, created_date, last_modified_date";

/// The columns a [`PurposeEvent`] is read from.
pub(crate) const EVENT_COLUMNS: &str =
    "project_id, id, seq, data_subject, app, purpose_code, status, \
     consent_id, acceptance_date, expired_date, withdrawal_date, recorded_at";

pub(crate) fn record_from_row(row: &impl SqlRow) -> Result<ContentRecord> {
    Ok(ContentRecord {
        id: row.col("id")?,
        project_id: row.col("project_id")?,
        content_type: content_type_from_db(&row.col::<String>("content_type")?)?,
        version: row.col("version")?,
        seq: row.col("seq")?,
        created_by: row.col("created_by")?,
        last_modified_by: row.col("last_modified_by")?,
        created_date: row.col("created_date")?,
        last_modified_date: row.col("last_modified_date")?,
        data: data_from_json(&row.col::<Json<String>>("data")?.0)?,
    })
}

pub(crate) fn records(rows: &[impl SqlRow]) -> Result<Vec<ContentRecord>> {
    rows.iter().map(record_from_row).collect()
}

pub(crate) fn event_from_row(row: &impl SqlRow) -> Result<PurposeEvent> {
    Ok(PurposeEvent {
        id: row.col("id")?,
        project_id: row.col("project_id")?,
        data_subject: row.col("data_subject")?,
        app: row.col("app")?,
        purpose_code: row.col("purpose_code")?,
        status: AcceptanceStatus::parse(&row.col::<String>("status")?),
        consent_id: row.col("consent_id")?,
        acceptance_date: row.col("acceptance_date")?,
        expired_date: row.col("expired_date")?,
        withdrawal_date: row.col("withdrawal_date")?,
        recorded_at: row.col("recorded_at")?,
        seq: row.col("seq")?,
    })
}

/// Every version of a record, oldest first.
pub(crate) fn versions_sql(project: &str, content_type: ContentType, id: &str) -> Sql {
    Sql::new(format!(
        "SELECT {CONTENT_COLUMNS} FROM content_version v \
         WHERE project_id = $1 AND content_type = $2 AND id = $3 ORDER BY version"
    ))
    .bind(project)
    .bind(content_type.as_str())
    .bind(id)
}

/// Every version of a record, oldest first, inside the caller's
/// transaction.
pub(crate) async fn content_versions_in<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    content_type: ContentType,
    id: &str,
) -> Result<Vec<ContentRecord>, Abort> {
    let rows = rows::<D>(conn, &versions_sql(project, content_type, id)).await?;
    Ok(records(&rows)?)
}

/// Every purpose event of every project, in `seq` order, inside the
/// caller's transaction (filling the history of an older database).
pub(crate) async fn all_purpose_events<D: Dialect>(
    conn: &mut Conn<D>,
) -> Result<Vec<PurposeEvent>, Abort> {
    let sql = Sql::new(format!(
        "SELECT {EVENT_COLUMNS} FROM purpose_event ORDER BY seq"
    ));
    let rows = rows::<D>(conn, &sql).await?;
    Ok(rows.iter().map(event_from_row).collect::<Result<_>>()?)
}
