//! The outbox and webhooks, for every SQL dialect (see
//! `migrations/*/0130_outbox.sql`): [`append`] and [`erase`] run inside
//! the caller's write transaction; the rest implement
//! [`OutboxStore`](crate::store::OutboxStore).

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::dialect::{acquire, execute, read_all, retry, row, rows, Abort, Conn, Dialect};
use super::limit_offset;
use super::query::{Arg, Json, Sql, SqlRow};
use crate::core::outbox::webhook::{Attempt, Claimed, Delivery, DeliveryState, Endpoint, Next};
use crate::core::outbox::{EventType, OutboxEvent};
use crate::store::Page;
use crate::{Error, Result};

/// Writes `event` and one pending delivery per enabled endpoint of its
/// project that takes its type, in the caller's transaction.
pub(crate) async fn append<D: Dialect>(
    conn: &mut Conn<D>,
    event: &OutboxEvent,
) -> Result<(), Abort> {
    append_all::<D>(conn, &event.project_id, std::slice::from_ref(event)).await
}

/// Writes `events` (all of `project`) and one pending delivery per enabled
/// endpoint of the project that takes an event's type, in two statements,
/// in the caller's transaction.
pub(crate) async fn append_all<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    events: &[OutboxEvent],
) -> Result<(), Abort> {
    if events.is_empty() {
        return Ok(());
    }
    let mut insert = Sql::new(
        "INSERT INTO outbox_event (project_id, id, event_type, occurred_at, data_subject, payload) \
         VALUES ",
    );
    for (i, event) in events.iter().enumerate() {
        debug_assert_eq!(event.project_id, project);
        let payload = serde_json::to_string(&event.payload).map_err(Error::internal)?;
        insert.push(if i == 0 { "(" } else { ", (" });
        insert
            .push_list([
                Arg::from(project),
                Arg::from(event.id),
                Arg::from(event.event_type.as_str()),
                Arg::from(event.occurred_at),
                Arg::from(&event.data_subject),
                Arg::from(Json(payload)),
            ])
            .push(")");
    }
    execute::<D>(conn, &insert).await?;
    let mut fan_out = Sql::new(format!(
        "INSERT INTO webhook_delivery \
         (project_id, endpoint_id, event_id, event_type, state, attempts, failures, next_at, since) \
         SELECT w.project_id, w.id, e.id, e.event_type, 'PENDING', 0, 0, e.occurred_at, \
         e.occurred_at FROM webhook_endpoint w JOIN outbox_event e ON e.project_id = w.project_id \
         WHERE w.project_id = $1 AND w.enabled = 1 \
         AND (w.event_types = '' OR {}(w.event_types, ',' || e.event_type || ',') > 0) \
         AND e.id IN (",
        D::POSITION_FN
    ))
    .bind(project);
    fan_out.push_list(events.iter().map(|e| e.id)).push(")");
    execute::<D>(conn, &fan_out).await?;
    Ok(())
}

/// Replaces `subject` with `pseudonym` in every stored event of the
/// project, in the caller's transaction.
pub(crate) async fn erase<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    subject: &str,
    pseudonym: &str,
) -> Result<(), Abort> {
    let sql = Sql::new(
        "UPDATE outbox_event SET data_subject = $3 WHERE project_id = $1 AND data_subject = $2",
    )
    .bind(project)
    .bind(subject)
    .bind(pseudonym);
    execute::<D>(conn, &sql).await?;
    Ok(())
}

const ENDPOINT_COLUMNS: &str = "project_id, id, url, secret, event_types, enabled, description, \
     created_date, last_modified_date";

fn endpoint_from_row(r: &impl SqlRow) -> Result<Endpoint> {
    Ok(Endpoint {
        id: r.col("id")?,
        project_id: r.col("project_id")?,
        url: r.col("url")?,
        secret: r.col("secret")?,
        event_types: Endpoint::filter_from_text(&r.col::<String>("event_types")?),
        enabled: r.col::<i32>("enabled")? == 1,
        description: r.col("description")?,
        created_date: r.col("created_date")?,
        last_modified_date: r.col("last_modified_date")?,
    })
}

const EVENT_COLUMNS: &str = "project_id, id, event_type, occurred_at, data_subject, payload";

fn event_from_row(r: &impl SqlRow) -> Result<OutboxEvent> {
    let payload: Json<String> = r.col("payload")?;
    Ok(OutboxEvent {
        id: r.col("id")?,
        project_id: r.col("project_id")?,
        event_type: EventType::parse(&r.col::<String>("event_type")?),
        occurred_at: r.col("occurred_at")?,
        data_subject: r.col("data_subject")?,
        payload: serde_json::from_str(&payload.0)
            .map_err(|e| super::corrupt("outbox payload", e))?,
    })
}

const DELIVERY_COLUMNS: &str = "project_id, endpoint_id, event_id, event_type, state, attempts, \
     failures, next_at, since, delivered_at, last_status, last_error";

fn delivery_from_row(r: &impl SqlRow) -> Result<Delivery> {
    Ok(Delivery {
        event_id: r.col("event_id")?,
        endpoint_id: r.col("endpoint_id")?,
        project_id: r.col("project_id")?,
        event_type: EventType::parse(&r.col::<String>("event_type")?),
        state: DeliveryState::parse(&r.col::<String>("state")?),
        attempts: r.col("attempts")?,
        failures: r.col("failures")?,
        next_at: r.col("next_at")?,
        since: r.col("since")?,
        delivered_at: r.col("delivered_at")?,
        last_status: r
            .col::<Option<i64>>("last_status")?
            .and_then(|s| i32::try_from(s).ok()),
        last_error: r.col("last_error")?,
    })
}

fn key(sql: Sql, project: &str, endpoint: Uuid, event: Uuid) -> Sql {
    sql.bind(project).bind(endpoint).bind(event)
}

const BY_KEY: &str = "project_id = $1 AND endpoint_id = $2 AND event_id = $3";

/// [`OutboxStore::insert_endpoint`](crate::store::OutboxStore::insert_endpoint).
pub(crate) async fn insert_endpoint<D: Dialect>(db: &D, e: &Endpoint, max: usize) -> Result<bool> {
    retry::<D, _, _, _>(|| async {
        let mut tx = db.begin_write().await?;
        let count = Sql::new("SELECT COUNT(*) AS n FROM webhook_endpoint WHERE project_id = $1")
            .bind(&e.project_id);
        let n: i64 = match row::<D>(tx.conn(), &count).await? {
            Some(r) => r.col("n")?,
            None => 0,
        };
        if usize::try_from(n).unwrap_or(usize::MAX) >= max {
            tx.rollback().await?;
            return Ok(false);
        }
        let sql = Sql::new(format!(
            "INSERT INTO webhook_endpoint ({ENDPOINT_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        ))
        .bind(&e.project_id)
        .bind(e.id)
        .bind(&e.url)
        .bind(&e.secret)
        .bind(e.filter_text())
        .bind(i32::from(e.enabled))
        .bind(&e.description)
        .bind(e.created_date)
        .bind(e.last_modified_date);
        execute::<D>(tx.conn(), &sql).await?;
        tx.commit().await?;
        Ok(true)
    })
    .await
}

/// [`OutboxStore::update_endpoint`](crate::store::OutboxStore::update_endpoint).
pub(crate) async fn update_endpoint<D: Dialect>(db: &D, e: &Endpoint) -> Result<bool> {
    let sql = Sql::new(
        "UPDATE webhook_endpoint SET url = $3, event_types = $4, enabled = $5, \
         description = $6, last_modified_date = $7 WHERE project_id = $1 AND id = $2",
    )
    .bind(&e.project_id)
    .bind(e.id)
    .bind(&e.url)
    .bind(e.filter_text())
    .bind(i32::from(e.enabled))
    .bind(&e.description)
    .bind(e.last_modified_date);
    retry::<D, _, _, _>(|| async {
        let mut tx = db.begin_write().await?;
        let n = execute::<D>(tx.conn(), &sql).await?;
        tx.commit().await?;
        Ok(n > 0)
    })
    .await
}

/// [`OutboxStore::delete_endpoint`](crate::store::OutboxStore::delete_endpoint).
pub(crate) async fn delete_endpoint<D: Dialect>(db: &D, project: &str, id: Uuid) -> Result<bool> {
    retry::<D, _, _, _>(|| async {
        let mut tx = db.begin_write().await?;
        for table in ["webhook_attempt", "webhook_delivery"] {
            let sql = Sql::new(format!(
                "DELETE FROM {table} WHERE project_id = $1 AND endpoint_id = $2"
            ))
            .bind(project)
            .bind(id);
            execute::<D>(tx.conn(), &sql).await?;
        }
        let sql = Sql::new("DELETE FROM webhook_endpoint WHERE project_id = $1 AND id = $2")
            .bind(project)
            .bind(id);
        let n = execute::<D>(tx.conn(), &sql).await?;
        tx.commit().await?;
        Ok(n > 0)
    })
    .await
}

/// [`OutboxStore::endpoint`](crate::store::OutboxStore::endpoint).
pub(crate) async fn endpoint<D: Dialect>(
    db: &D,
    project: &str,
    id: Uuid,
) -> Result<Option<Endpoint>> {
    let sql = Sql::new(format!(
        "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoint WHERE project_id = $1 AND id = $2"
    ))
    .bind(project)
    .bind(id);
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        match row::<D>(&mut conn, &sql).await? {
            Some(r) => Ok(Some(endpoint_from_row(&r)?)),
            None => Ok(None),
        }
    })
    .await
}

/// [`OutboxStore::endpoints`](crate::store::OutboxStore::endpoints).
pub(crate) async fn endpoints<D: Dialect>(db: &D, project: &str) -> Result<Vec<Endpoint>> {
    let sql = Sql::new(format!(
        "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoint WHERE project_id = $1 \
         ORDER BY created_date, id"
    ))
    .bind(project);
    read_all(db, &sql, endpoint_from_row).await
}

/// [`OutboxStore::outbox_events`](crate::store::OutboxStore::outbox_events).
pub(crate) async fn outbox_events<D: Dialect>(
    db: &D,
    project: &str,
    after: Option<Uuid>,
    limit: u32,
) -> Result<Vec<OutboxEvent>> {
    let mut sql = Sql::new(format!(
        "SELECT {EVENT_COLUMNS} FROM outbox_event WHERE project_id = $1"
    ))
    .bind(project);
    if let Some(after) = after {
        sql.push(" AND id > ").push_bind(after);
    }
    sql.push(" ORDER BY id LIMIT ").push_bind(i64::from(limit));
    read_all(db, &sql, event_from_row).await
}

async fn try_claim<D: Dialect>(
    db: &D,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
    limit: u32,
    project: Option<&str>,
) -> Result<Vec<Claimed>, Abort> {
    let mut tx = db.begin_write().await?;
    // The conditions are repeated outside the subquery: PostgreSQL checks
    // them again on a row another claim changed meanwhile.
    let claim = Sql::new(format!(
        "UPDATE webhook_delivery SET lease_until = $2, attempts = attempts + 1 \
         WHERE (project_id, endpoint_id, event_id) IN ( \
            SELECT d.project_id, d.endpoint_id, d.event_id FROM webhook_delivery d \
            WHERE d.state = 'PENDING' AND d.next_at <= $1{} \
            AND (d.lease_until IS NULL OR d.lease_until <= $1) \
            AND EXISTS (SELECT 1 FROM webhook_endpoint e \
                WHERE e.project_id = d.project_id AND e.id = d.endpoint_id AND e.enabled = 1) \
            ORDER BY d.next_at LIMIT $3{}) \
         AND state = 'PENDING' AND (lease_until IS NULL OR lease_until <= $1) \
         RETURNING {DELIVERY_COLUMNS}",
        if project.is_some() {
            " AND d.project_id = $4"
        } else {
            ""
        },
        D::SKIP_LOCKED
    ))
    .bind(now)
    .bind(until)
    .bind(i64::from(limit));
    let claim = match project {
        Some(p) => claim.bind(p),
        None => claim,
    };
    let claimed = rows::<D>(tx.conn(), &claim)
        .await?
        .iter()
        .map(delivery_from_row)
        .collect::<Result<Vec<_>>>()?;
    let mut out = Vec::with_capacity(claimed.len());
    for d in claimed {
        let event = Sql::new(format!(
            "SELECT {EVENT_COLUMNS} FROM outbox_event WHERE project_id = $1 AND id = $2"
        ))
        .bind(&d.project_id)
        .bind(d.event_id);
        let Some(event) = row::<D>(tx.conn(), &event).await? else {
            continue;
        };
        let endpoint =
            Sql::new("SELECT url, secret FROM webhook_endpoint WHERE project_id = $1 AND id = $2")
                .bind(&d.project_id)
                .bind(d.endpoint_id);
        let Some(endpoint) = row::<D>(tx.conn(), &endpoint).await? else {
            continue;
        };
        out.push(Claimed {
            event: event_from_row(&event)?,
            url: endpoint.col("url")?,
            secret: endpoint.col("secret")?,
            delivery: d,
        });
    }
    tx.commit().await?;
    Ok(out)
}

/// [`OutboxStore::claim_deliveries`](crate::store::OutboxStore::claim_deliveries).
pub(crate) async fn claim_deliveries<D: Dialect>(
    db: &D,
    now: DateTime<Utc>,
    lease: Duration,
    limit: u32,
    project: Option<&str>,
) -> Result<Vec<Claimed>> {
    let until = now + chrono::Duration::from_std(lease).map_err(Error::internal)?;
    retry::<D, _, _, _>(|| try_claim(db, now, until, limit, project)).await
}

/// [`OutboxStore::finish_delivery`](crate::store::OutboxStore::finish_delivery).
pub(crate) async fn finish_delivery<D: Dialect>(
    db: &D,
    d: &Delivery,
    attempt: &Attempt,
    next: Next,
) -> Result<bool> {
    let (state, next_at, delivered_at) = match next {
        Next::Delivered => (DeliveryState::Delivered, None, Some(attempt.at)),
        Next::RetryAt(at) => (DeliveryState::Pending, Some(at), None),
        Next::Dead => (DeliveryState::Dead, None, None),
    };
    let update = key(
        Sql::new(format!(
            "UPDATE webhook_delivery SET state = $4, next_at = $5, delivered_at = $6, \
             failures = $7, last_status = $8, last_error = $9, lease_until = NULL \
             WHERE {BY_KEY} AND attempts = $10 AND state = 'PENDING'"
        )),
        &d.project_id,
        d.endpoint_id,
        d.event_id,
    )
    .bind(state.as_str())
    .bind(next_at)
    .bind(delivered_at)
    .bind(d.failures)
    .bind(attempt.status.map(i64::from))
    .bind(&attempt.error)
    .bind(d.attempts);
    let insert = key(
        Sql::new(
            "INSERT INTO webhook_attempt \
             (project_id, endpoint_id, event_id, attempt, at, status, error, duration_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (project_id, endpoint_id, event_id, attempt) DO NOTHING",
        ),
        &d.project_id,
        d.endpoint_id,
        d.event_id,
    )
    .bind(attempt.attempt)
    .bind(attempt.at)
    .bind(attempt.status.map(i64::from))
    .bind(&attempt.error)
    .bind(attempt.duration_ms);
    retry::<D, _, _, _>(|| async {
        let mut tx = db.begin_write().await?;
        if execute::<D>(tx.conn(), &update).await? == 0 {
            tx.rollback().await?;
            return Ok(false);
        }
        execute::<D>(tx.conn(), &insert).await?;
        tx.commit().await?;
        Ok(true)
    })
    .await
}

async fn try_deliveries<D: Dialect>(
    db: &D,
    project: &str,
    endpoint: Uuid,
    page: u32,
    size: u32,
) -> Result<Page<Delivery>, Abort> {
    let mut tx = db.begin_read().await?;
    let count = Sql::new(
        "SELECT COUNT(*) AS n FROM webhook_delivery WHERE project_id = $1 AND endpoint_id = $2",
    )
    .bind(project)
    .bind(endpoint);
    let total: i64 = match row::<D>(tx.conn(), &count).await? {
        Some(r) => r.col("n")?,
        None => 0,
    };
    let (limit, offset) = limit_offset(page, size);
    let select = Sql::new(format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_delivery WHERE project_id = $1 \
         AND endpoint_id = $2 ORDER BY event_id DESC LIMIT $3 OFFSET $4"
    ))
    .bind(project)
    .bind(endpoint)
    .bind(limit)
    .bind(offset);
    let items = rows::<D>(tx.conn(), &select)
        .await?
        .iter()
        .map(delivery_from_row)
        .collect::<Result<Vec<_>>>()?;
    tx.commit().await?;
    Ok(Page {
        items,
        page,
        size,
        total: u64::try_from(total).unwrap_or_default(),
    })
}

/// [`OutboxStore::deliveries`](crate::store::OutboxStore::deliveries).
pub(crate) async fn deliveries<D: Dialect>(
    db: &D,
    project: &str,
    endpoint: Uuid,
    page: u32,
    size: u32,
) -> Result<Page<Delivery>> {
    retry::<D, _, _, _>(|| try_deliveries(db, project, endpoint, page, size)).await
}

async fn fetch_delivery<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    endpoint: Uuid,
    event: Uuid,
) -> Result<Option<(Delivery, Vec<Attempt>)>, Abort> {
    let select = key(
        Sql::new(format!(
            "SELECT {DELIVERY_COLUMNS} FROM webhook_delivery WHERE {BY_KEY}"
        )),
        project,
        endpoint,
        event,
    );
    let Some(d) = row::<D>(conn, &select).await? else {
        return Ok(None);
    };
    let d = delivery_from_row(&d)?;
    let attempts = key(
        Sql::new(format!(
            "SELECT attempt, at, status, error, duration_ms FROM webhook_attempt \
             WHERE {BY_KEY} ORDER BY attempt"
        )),
        project,
        endpoint,
        event,
    );
    let attempts = rows::<D>(conn, &attempts)
        .await?
        .iter()
        .map(|r| {
            Ok(Attempt {
                attempt: r.col("attempt")?,
                at: r.col("at")?,
                status: r
                    .col::<Option<i64>>("status")?
                    .and_then(|s| i32::try_from(s).ok()),
                error: r.col("error")?,
                duration_ms: r.col("duration_ms")?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some((d, attempts)))
}

/// [`OutboxStore::delivery`](crate::store::OutboxStore::delivery).
pub(crate) async fn delivery<D: Dialect>(
    db: &D,
    project: &str,
    endpoint: Uuid,
    event: Uuid,
) -> Result<Option<(Delivery, Vec<Attempt>)>> {
    retry::<D, _, _, _>(|| async {
        let mut tx = db.begin_read().await?;
        let out = fetch_delivery::<D>(tx.conn(), project, endpoint, event).await?;
        tx.commit().await?;
        Ok(out)
    })
    .await
}

/// [`OutboxStore::redeliver`](crate::store::OutboxStore::redeliver).
pub(crate) async fn redeliver<D: Dialect>(
    db: &D,
    project: &str,
    endpoint: Uuid,
    event: Uuid,
    now: DateTime<Utc>,
) -> Result<Option<Delivery>> {
    let update = key(
        Sql::new(format!(
            "UPDATE webhook_delivery SET state = 'PENDING', next_at = $4, since = $4, \
             failures = 0, lease_until = NULL, delivered_at = NULL WHERE {BY_KEY}"
        )),
        project,
        endpoint,
        event,
    )
    .bind(now);
    retry::<D, _, _, _>(|| async {
        let mut tx = db.begin_write().await?;
        execute::<D>(tx.conn(), &update).await?;
        let out = fetch_delivery::<D>(tx.conn(), project, endpoint, event).await?;
        tx.commit().await?;
        Ok(out.map(|(d, _)| d))
    })
    .await
}
