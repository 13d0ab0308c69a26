//! A data subject's history as rows, for every SQL dialect (see
//! `migrations/*/0110_consent_history.sql` and
//! [`crate::core::consent::history`]): kept up to date inside the write
//! transactions of the records it comes from, and paged by its primary
//! key (the page's keys from the key alone, then their events).

use super::content::data_json;
use super::dialect::{execute, retry, row, rows, Abort, Conn, Dialect};
use super::limit_offset;
use super::query::{Json, Sql, SqlRow};
use super::records::{all_purpose_events, content_versions_in};
use crate::core::consent::erasure::{self, ErasureCounts};
use crate::core::consent::evidence::{EventKind, HistoryQuery, SubjectEvent};
use crate::core::consent::history::{self, ExpiredAcceptance, HistoryRow};
use crate::core::consent::{ContentRecord, ContentType, PurposeEvent};
use crate::store::Page;
use crate::{Error, Result};

const ACCEPTANCE: &str = "acceptance";
const PURPOSE: &str = "purpose";

async fn insert<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    r: &HistoryRow,
) -> Result<(), Abort> {
    let event = serde_json::to_string(&r.event).map_err(Error::internal)?;
    let sql = Sql::new(
        "INSERT INTO consent_history (project_id, data_subject, at, derived, ord, source, \
         record_id, app, consent_id, notice_id, event, kind) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(project)
    .bind(&r.subject)
    .bind(r.event.at)
    .bind(i64::from(r.derived))
    .bind(r.ord)
    .bind(if r.of_acceptance { ACCEPTANCE } else { PURPOSE })
    .bind(&r.event.record_id)
    .bind(&r.event.application)
    .bind(&r.event.consent_id)
    .bind(&r.event.privacy_notice_id)
    .bind(event)
    .bind(r.event.kind.as_str());
    execute::<D>(conn, &sql).await?;
    Ok(())
}

/// Recomputes the rows of acceptance `id` from its versions and the
/// histories of the consent and notice it pins.
pub(crate) async fn refresh_acceptance<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    id: &str,
) -> Result<(), Abort> {
    let versions =
        content_versions_in::<D>(conn, project, ContentType::ConsentAcceptance, id).await?;
    let (consent_id, notice_id) = history::pinned_ids(&versions);
    let mut pinned: [Vec<ContentRecord>; 2] = [Vec::new(), Vec::new()];
    for (slot, (t, pin)) in pinned.iter_mut().zip([
        (ContentType::Consent, consent_id),
        (ContentType::PrivacyNotice, notice_id),
    ]) {
        if let Some(pin) = pin {
            *slot = content_versions_in::<D>(conn, project, t, &pin).await?;
        }
    }
    let forget = Sql::new(
        "DELETE FROM consent_history WHERE project_id = $1 AND record_id = $2 AND source = $3",
    )
    .bind(project)
    .bind(id)
    .bind(ACCEPTANCE);
    execute::<D>(conn, &forget).await?;
    for r in history::acceptance_rows(&versions, &pinned[0], &pinned[1]) {
        insert::<D>(conn, project, &r).await?;
    }
    Ok(())
}

/// Keeps the history after a content version was appended in the caller's
/// transaction: an acceptance's rows are recomputed; a new version of a
/// consent or notice recomputes the rows of every acceptance pinning it
/// (its `RECONSENT_REQUIRED` events).
pub(crate) async fn after_content<D: Dialect>(
    conn: &mut Conn<D>,
    record: &ContentRecord,
) -> Result<(), Abort> {
    let column = match record.content_type {
        ContentType::ConsentAcceptance => {
            return refresh_acceptance::<D>(conn, &record.project_id, &record.id).await;
        }
        ContentType::Consent => "consent_id",
        ContentType::PrivacyNotice => "notice_id",
        ContentType::Purpose => return Ok(()),
    };
    let pinning = Sql::new(format!(
        "SELECT DISTINCT record_id FROM consent_history \
         WHERE project_id = $1 AND {column} = $2 AND source = $3"
    ))
    .bind(&record.project_id)
    .bind(&record.id)
    .bind(ACCEPTANCE);
    let ids: Vec<String> = rows::<D>(conn, &pinning)
        .await?
        .iter()
        .map(|r| r.col("record_id"))
        .collect::<Result<_>>()?;
    for id in ids {
        refresh_acceptance::<D>(conn, &record.project_id, &id).await?;
    }
    Ok(())
}

/// Adds the row of a purpose event appended in the caller's transaction.
pub(crate) async fn after_purpose_event<D: Dialect>(
    conn: &mut Conn<D>,
    event: &PurposeEvent,
) -> Result<(), Abort> {
    insert::<D>(conn, &event.project_id, &history::purpose_row(event)).await
}

/// Keeps the history after an erasure in the caller's transaction: the
/// erased acceptances' rows are recomputed (from their erased versions),
/// the purpose events' rows move to the pseudonym.
pub(crate) async fn after_erasure<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    acceptances: impl IntoIterator<Item = &String>,
    subject: &str,
    pseudonym: &str,
) -> Result<(), Abort> {
    for id in acceptances {
        refresh_acceptance::<D>(conn, project, id).await?;
    }
    let rename = Sql::new(
        "UPDATE consent_history SET data_subject = $1 \
         WHERE project_id = $2 AND data_subject = $3 AND source = $4",
    )
    .bind(pseudonym)
    .bind(project)
    .bind(subject)
    .bind(PURPOSE);
    execute::<D>(conn, &rename).await?;
    Ok(())
}

/// Fills the history of a database that held consent records before the
/// history table existed (once: `consent_history_state.built`).
pub(crate) async fn backfill<D: Dialect>(conn: &mut Conn<D>) -> Result<(), Abort> {
    let state = row::<D>(conn, &Sql::new("SELECT built FROM consent_history_state")).await?;
    if state.map(|r| r.col::<i64>("built")).transpose()? != Some(0) {
        return Ok(());
    }
    execute::<D>(conn, &Sql::new("DELETE FROM consent_history")).await?;
    let acceptances =
        Sql::new("SELECT DISTINCT project_id, id FROM content_version WHERE content_type = $1")
            .bind(ContentType::ConsentAcceptance.as_str());
    let ids: Vec<(String, String)> = rows::<D>(conn, &acceptances)
        .await?
        .iter()
        .map(|r| Ok((r.col("project_id")?, r.col("id")?)))
        .collect::<Result<_>>()?;
    for (project, id) in ids {
        refresh_acceptance::<D>(conn, &project, &id).await?;
    }
    let events = all_purpose_events::<D>(conn).await?;
    for e in &events {
        after_purpose_event::<D>(conn, e).await?;
    }
    execute::<D>(
        conn,
        &Sql::new("UPDATE consent_history_state SET built = 1"),
    )
    .await?;
    Ok(())
}

/// Appends the `WHERE` clause of a history read (shared by the page and
/// its count).
fn push_where(
    sql: &mut Sql,
    project: &str,
    subject: &str,
    query: &HistoryQuery,
    now: chrono::DateTime<chrono::Utc>,
) {
    sql.push(" WHERE project_id = ")
        .push_bind(project)
        .push(" AND data_subject = ")
        .push_bind(subject)
        .push(" AND (derived = 0 OR at <= ")
        .push_bind(now)
        .push(")");
    if let Some(app) = &query.app {
        sql.push(" AND app = ").push_bind(app.as_str());
    }
    if let Some(c) = &query.consent_id {
        sql.push(" AND consent_id = ").push_bind(c.as_str());
    }
    if let Some(from) = query.from {
        sql.push(" AND at >= ").push_bind(from);
    }
    if let Some(to) = query.to {
        sql.push(" AND at < ").push_bind(to);
    }
}

async fn try_page<D: Dialect>(
    db: &D,
    project: &str,
    subject: &str,
    query: &HistoryQuery,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Page<SubjectEvent>, Abort> {
    // One snapshot for the page and its total.
    let mut tx = db.begin_read().await?;
    let mut count = Sql::new("SELECT COUNT(*) AS n FROM consent_history");
    push_where(&mut count, project, subject, query, now);
    let total: i64 = match row::<D>(tx.conn(), &count).await? {
        Some(row) => row.col("n")?,
        None => 0,
    };
    // The page's keys are found first, in the primary key alone (an
    // index-only scan where no filter names a column outside it), and only
    // the events of its rows are read, each by its key: skipping to a late
    // page reads index entries, not the events before it. Asked as one
    // query, or with the events joined to the keys, PostgreSQL's plans
    // (custom or generic) may read every event of the subject instead
    // (`benches/evidence.rs` times both pages).
    let (limit, offset) = limit_offset(query.page, query.size);
    let mut select =
        Sql::new("SELECT (SELECT h.event FROM consent_history h WHERE h.project_id = ");
    select
        .push_bind(project)
        .push(" AND h.data_subject = ")
        .push_bind(subject)
        .push(
            " AND h.at = p.at AND h.derived = p.derived AND h.ord = p.ord) AS event \
             FROM (SELECT at, derived, ord FROM consent_history",
        );
    push_where(&mut select, project, subject, query, now);
    select
        .push(" ORDER BY at, derived, ord LIMIT ")
        .push_bind(limit)
        .push(" OFFSET ")
        .push_bind(offset)
        .push(") p ORDER BY p.at, p.derived, p.ord");
    let rows = rows::<D>(tx.conn(), &select).await?;
    tx.commit().await?;
    let items = rows
        .iter()
        .map(|r| {
            let text: String = r.col("event")?;
            serde_json::from_str(&text).map_err(|e| super::corrupt("history event", e))
        })
        .collect::<Result<_>>()?;
    Ok(Page {
        items,
        page: query.page,
        size: query.size,
        total: u64::try_from(total).unwrap_or_default(),
    })
}

/// [`HistoryStore::subject_history`](crate::store::HistoryStore::subject_history).
pub(crate) async fn subject_history<D: Dialect>(
    db: &D,
    project: &str,
    subject: &str,
    query: &HistoryQuery,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Page<SubjectEvent>> {
    retry::<D, _, _, _>(|| try_page(db, project, subject, query, now)).await
}

async fn try_expired<D: Dialect>(
    db: &D,
    project: &str,
    now: chrono::DateTime<chrono::Utc>,
    page: u32,
    size: u32,
) -> Result<Page<ExpiredAcceptance>, Abort> {
    let filter = |sql: &mut Sql| {
        sql.push(" WHERE project_id = ")
            .push_bind(project)
            .push(" AND kind = ")
            .push_bind(EventKind::Expired.as_str())
            .push(" AND at <= ")
            .push_bind(now);
    };
    let mut tx = db.begin_read().await?;
    let mut count = Sql::new("SELECT COUNT(*) AS n FROM consent_history");
    filter(&mut count);
    let total: i64 = match row::<D>(tx.conn(), &count).await? {
        Some(row) => row.col("n")?,
        None => 0,
    };
    let (limit, offset) = limit_offset(page, size);
    let mut select = Sql::new("SELECT data_subject, event FROM consent_history");
    filter(&mut select);
    select
        .push(" ORDER BY at, ord LIMIT ")
        .push_bind(limit)
        .push(" OFFSET ")
        .push_bind(offset);
    let rows = rows::<D>(tx.conn(), &select).await?;
    tx.commit().await?;
    let mut items = Vec::with_capacity(rows.len());
    for r in &rows {
        let text: String = r.col("event")?;
        let event: SubjectEvent =
            serde_json::from_str(&text).map_err(|e| super::corrupt("history event", e))?;
        let subject: String = r.col("data_subject")?;
        items.extend(ExpiredAcceptance::of(&subject, &event));
    }
    Ok(Page {
        items,
        page,
        size,
        total: u64::try_from(total).unwrap_or_default(),
    })
}

/// [`HistoryStore::expired_acceptances`](crate::store::HistoryStore::expired_acceptances).
pub(crate) async fn expired_acceptances<D: Dialect>(
    db: &D,
    project: &str,
    now: chrono::DateTime<chrono::Utc>,
    page: u32,
    size: u32,
) -> Result<Page<ExpiredAcceptance>> {
    retry::<D, _, _, _>(|| try_expired(db, project, now, page, size)).await
}

/// [`HistoryStore::ended_acceptances`](crate::store::HistoryStore::ended_acceptances).
pub(crate) async fn ended_acceptances<D: Dialect>(
    db: &D,
    project: &str,
    before: chrono::DateTime<chrono::Utc>,
    limit: u32,
) -> Result<Vec<(String, String)>> {
    let sql = Sql::new(
        "SELECT record_id, MIN(data_subject) AS data_subject FROM consent_history \
         WHERE project_id = $1 AND kind IN ($2, $3) AND at < $4 AND source = $5 \
         AND data_subject NOT LIKE 'pseudonym:%' \
         GROUP BY record_id ORDER BY record_id LIMIT $6",
    )
    .bind(project)
    .bind(EventKind::Expired.as_str())
    .bind(EventKind::Withdrawn.as_str())
    .bind(before)
    .bind(ACCEPTANCE)
    .bind(i64::from(limit));
    retry::<D, _, _, _>(|| async {
        let mut conn = super::dialect::acquire(db).await?;
        rows::<D>(&mut conn, &sql)
            .await?
            .iter()
            .map(|r| Ok((r.col("record_id")?, r.col("data_subject")?)))
            .collect::<Result<_>>()
            .map_err(Abort::Fail)
    })
    .await
}

async fn try_purge<D: Dialect>(
    db: &D,
    project: &str,
    id: &str,
    pseudonym: &str,
) -> Result<ErasureCounts, Abort> {
    let mut tx = db.begin_write().await?;
    let mut counts = ErasureCounts::default();
    let versions =
        content_versions_in::<D>(tx.conn(), project, ContentType::ConsentAcceptance, id).await?;
    for v in &versions {
        let erased = erasure::erase_acceptance(&v.data, pseudonym);
        if erased == v.data {
            continue;
        }
        let update = Sql::new(
            "UPDATE content_version SET data = $1 \
             WHERE project_id = $2 AND content_type = $3 AND id = $4 AND version = $5",
        )
        .bind(Json(data_json(&erased)?))
        .bind(project)
        .bind(ContentType::ConsentAcceptance.as_str())
        .bind(id)
        .bind(v.version);
        execute::<D>(tx.conn(), &update).await?;
        counts.acceptance_versions += 1;
    }
    let forget = Sql::new(
        "UPDATE consent_ledger SET salt = NULL \
         WHERE project_id = $1 AND record_id = $2 AND salt IS NOT NULL",
    )
    .bind(project)
    .bind(id);
    counts.ledger_salts = execute::<D>(tx.conn(), &forget).await?;
    refresh_acceptance::<D>(tx.conn(), project, id).await?;
    tx.commit().await?;
    Ok(counts)
}

/// [`HistoryStore::purge_acceptance`](crate::store::HistoryStore::purge_acceptance).
pub(crate) async fn purge_acceptance<D: Dialect>(
    db: &D,
    project: &str,
    id: &str,
    pseudonym: &str,
) -> Result<ErasureCounts> {
    retry::<D, _, _, _>(|| try_purge(db, project, id, pseudonym)).await
}
