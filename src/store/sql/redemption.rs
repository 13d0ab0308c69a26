//! Redemptions and quota usage, for every SQL dialect.
//!
//! A redeem is one write transaction:
//!
//! 1. Insert the redemption record with `ON CONFLICT (project_id,
//!    idempotency_key) DO NOTHING`. The unique index is the idempotency
//!    check: when another transaction holds the same key uncommitted, the
//!    insert waits for it (PostgreSQL; in SQLite the write lock already
//!    keeps it out); if it commits, nothing is inserted and the stored
//!    record is returned as a replay; if it rolls back, the insert goes on.
//! 2. Charge every quota key, in the plan's order (sorted by key, so two
//!    redeems lock shared keys in the same order and cannot deadlock),
//!    each through the dialect's guard ([`Dialect::charge`]), which never
//!    lets the stored usage pass the limit whatever runs concurrently.
//! 3. Insert the charges. Commit.
//!
//! A charge refused rolls the whole transaction back.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::dialect::{acquire, execute, retry, row, rows, Abort, Conn, Dialect};
use super::query::{Arg, Json, Sql, SqlRow};
use super::{action_txs_from_json, action_txs_json, limit_offset, marks};
use crate::core::campaign::{QuotaCharge, QuotaUsage, QuotaWindow, Redemption, TxStatus};
use crate::core::outbox::OutboxEvent;
use crate::store::{Page, RedeemOutcome, RedemptionPlan, RedemptionQuery};
use crate::{Error, Result};

/// The columns a [`Redemption`] (without its charges) is read from.
const REDEMPTION_COLUMNS: &str = "id, project_id, campaign_id, campaign_code, campaign_version, \
     status, user_id, channel, idempotency_key, action_txs, created_date, cancelled_date, \
     request_fingerprint, code";

/// Most bound values in one `IN (…)` list.
const IN_CHUNK: usize = 500;

fn redemption_from_row(row: &impl SqlRow) -> Result<Redemption> {
    Ok(Redemption {
        id: row.col("id")?,
        project_id: row.col("project_id")?,
        campaign_id: row.col("campaign_id")?,
        campaign_code: row.col("campaign_code")?,
        campaign_version: row.col("campaign_version")?,
        status: TxStatus::parse(&row.col::<String>("status")?),
        user_id: row.col("user_id")?,
        channel: row.col("channel")?,
        idempotency_key: row.col("idempotency_key")?,
        request_fingerprint: row.col("request_fingerprint")?,
        action_txs: action_txs_from_json(&row.col::<Json<String>>("action_txs")?.0)?,
        quotas: Vec::new(),
        code: row.col("code")?,
        created_date: row.col("created_date")?,
        cancelled_date: row.col("cancelled_date")?,
    })
}

/// Fills in the charges of `redemptions` (all of one project).
async fn attach_charges<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    redemptions: &mut [Redemption],
) -> Result<(), Abort> {
    let index: HashMap<Uuid, usize> = redemptions
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id, i))
        .collect();
    let ids: Vec<Uuid> = index.keys().copied().collect();
    for chunk in ids.chunks(IN_CHUNK) {
        let mut sql = Sql::new(
            "SELECT redemption_id, quota_key, amount, quota_limit, window_seconds \
             FROM redemption_charge \
             WHERE project_id = $1 AND redemption_id IN (",
        )
        .bind(project);
        sql.push_list(chunk.iter().copied())
            .push(") ORDER BY redemption_id, position");
        for row in rows::<D>(conn, &sql).await? {
            let id: Uuid = row.col("redemption_id")?;
            let charge = QuotaCharge {
                key: row.col("quota_key")?,
                amount: row.col("amount")?,
                limit: row.col("quota_limit")?,
                window: row
                    .col::<Option<i64>>("window_seconds")?
                    .map(|s| {
                        QuotaWindow::from_seconds(s)
                            .ok_or_else(|| super::corrupt("redemption_charge.window_seconds", s))
                    })
                    .transpose()?,
            };
            if let Some(&i) = index.get(&id) {
                redemptions[i].quotas.push(charge);
            }
        }
    }
    Ok(())
}

/// How a redemption is looked up.
#[derive(Clone, Copy)]
pub(crate) enum By<'a> {
    Id(Uuid),
    Key(&'a str),
}

/// One redemption with its charges; `lock` locks its row until the
/// transaction ends (where the dialect locks rows).
pub(crate) async fn fetch_redemption<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    by: By<'_>,
    lock: bool,
) -> Result<Option<Redemption>, Abort> {
    let lock = if lock { D::FOR_UPDATE } else { "" };
    let (column, value) = match by {
        By::Id(id) => ("id", Arg::from(id)),
        By::Key(key) => ("idempotency_key", Arg::from(key)),
    };
    let sql = Sql::new(format!(
        "SELECT {REDEMPTION_COLUMNS} FROM redemption WHERE project_id = $1 AND {column} = $2{lock}"
    ))
    .bind(project)
    .bind(value);
    let Some(row) = row::<D>(conn, &sql).await? else {
        return Ok(None);
    };
    let mut found = [redemption_from_row(&row)?];
    attach_charges::<D>(conn, project, &mut found).await?;
    let [r] = found;
    Ok(Some(r))
}

/// Inserts the record of `r` unless its idempotency key is taken: whether
/// it was inserted.
pub(crate) async fn insert_redemption<D: Dialect>(
    conn: &mut Conn<D>,
    r: &Redemption,
) -> Result<bool, Abort> {
    insert_redemptions::<D>(conn, &r.project_id, &[r]).await
}

/// Inserts the charges of `r`, in plan order, in one statement.
pub(crate) async fn insert_charges<D: Dialect>(
    conn: &mut Conn<D>,
    r: &Redemption,
) -> Result<(), Abort> {
    insert_charges_of::<D>(conn, &r.project_id, &[r]).await
}

/// Inserts the `recorded` redemptions (all of `project`), in one
/// statement: whether every one was (an idempotency key already taken
/// makes its row do nothing).
pub(crate) async fn insert_redemptions<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    recorded: &[&Redemption],
) -> Result<bool, Abort> {
    let mut sql = Sql::new(
        "INSERT INTO redemption (id, project_id, campaign_id, campaign_code, campaign_version, \
         status, user_id, channel, idempotency_key, action_txs, created_date, cancelled_date, \
         request_fingerprint, code) VALUES ",
    );
    for (n, r) in recorded.iter().enumerate() {
        sql.push(if n == 0 { "(" } else { ", (" });
        sql.push_list([
            Arg::from(r.id),
            Arg::from(project),
            Arg::from(r.campaign_id),
            Arg::from(&r.campaign_code),
            Arg::from(r.campaign_version),
            Arg::from(r.status.as_str()),
            Arg::from(&r.user_id),
            Arg::from(&r.channel),
            Arg::from(&r.idempotency_key),
            Arg::from(Json(action_txs_json(&r.action_txs)?)),
            Arg::from(r.created_date),
            Arg::from(r.cancelled_date),
            Arg::from(&r.request_fingerprint),
            Arg::from(&r.code),
        ])
        .push(")");
    }
    sql.push(
        " ON CONFLICT (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING",
    );
    Ok(execute::<D>(conn, &sql).await? == recorded.len() as u64)
}

/// Inserts the charges of the `recorded` redemptions (all of `project`),
/// each in plan order, in one statement.
pub(crate) async fn insert_charges_of<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    recorded: &[&Redemption],
) -> Result<(), Abort> {
    let mut sql = Sql::new(
        "INSERT INTO redemption_charge \
         (project_id, redemption_id, position, quota_key, amount, quota_limit, window_seconds) \
         VALUES ",
    );
    let mut any = false;
    for r in recorded {
        for (position, charge) in r.quotas.iter().enumerate() {
            sql.push(if any { ", (" } else { "(" });
            any = true;
            sql.push_list([
                Arg::from(project),
                Arg::from(r.id),
                Arg::from(i32::try_from(position).map_err(Error::internal)?),
                Arg::from(&charge.key),
                Arg::from(charge.amount),
                Arg::from(charge.limit),
                Arg::from(charge.window.map(QuotaWindow::seconds)),
            ])
            .push(")");
        }
    }
    if any {
        execute::<D>(conn, &sql).await?;
    }
    Ok(())
}

/// How one redeem's statements ended, inside the caller's transaction.
pub(crate) enum Step {
    /// Recorded and charged: the caller commits.
    Recorded,
    /// Refused, or a replay of its idempotency key: the caller rolls back
    /// what the redeem wrote and answers this.
    Undo(Box<RedeemOutcome>),
}

/// The statements of one redeem `r` inside the caller's write transaction
/// (see the module docs).
pub(crate) async fn redeem_steps<D: Dialect>(
    conn: &mut Conn<D>,
    r: &Redemption,
) -> Result<Step, Abort> {
    if !insert_redemption::<D>(conn, r).await? {
        // Only the idempotency key can make the insert do nothing, and the
        // redemption holding it has committed, or is this transaction's
        // own: a new statement sees it.
        let key = r.idempotency_key.as_deref().unwrap_or_default();
        return match fetch_redemption::<D>(conn, &r.project_id, By::Key(key), false).await? {
            Some(stored) => Ok(Step::Undo(Box::new(RedeemOutcome::Replayed(stored)))),
            None => Err(Abort::Fail(Error::internal(
                "idempotency key claimed by a redemption that cannot be read",
            ))),
        };
    }
    // The code first, always before the quota keys: one lock order.
    if let Some(code) = &r.code {
        if let Some(refusal) =
            super::codes::take_code::<D>(conn, &r.project_id, r.campaign_id, code, r.created_date)
                .await?
        {
            return Ok(Step::Undo(Box::new(RedeemOutcome::CodeRefused(refusal))));
        }
    }
    if let Some((key, used, limit)) =
        marks::charge_all::<D>(conn, &r.project_id, &r.quotas, r.id, r.created_date, None).await?
    {
        let refused = RedeemOutcome::QuotaExceeded { key, used, limit };
        return Ok(Step::Undo(Box::new(refused)));
    }
    insert_charges::<D>(conn, r).await?;
    super::outbox::append::<D>(conn, &OutboxEvent::for_redemption(r)).await?;
    Ok(Step::Recorded)
}

/// One redeem in a transaction of its own; its campaign checked first when
/// the plan asks for it ([`super::verify`]).
pub(crate) async fn try_redeem<D: Dialect>(
    db: &D,
    plan: &RedemptionPlan,
) -> Result<RedeemOutcome, Abort> {
    let r = &plan.redemption;
    let mut tx = db.begin_write().await?;
    if plan.verify_campaign {
        let checked = super::verify::campaigns::<D>(tx.conn(), std::slice::from_ref(r), &[true]);
        if let Some(Some(refused)) = checked.await?.pop() {
            tx.rollback().await?;
            return Ok(refused);
        }
    }
    match redeem_steps::<D>(tx.conn(), r).await? {
        Step::Recorded => {
            tx.commit().await?;
            Ok(RedeemOutcome::Recorded(r.clone()))
        }
        Step::Undo(outcome) => {
            tx.rollback().await?;
            Ok(*outcome)
        }
    }
}

async fn try_cancel<D: Dialect>(
    db: &D,
    project: &str,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<Option<Redemption>, Abort> {
    let mut tx = db.begin_write().await?;
    // Locked: a concurrent cancel of the same redemption waits here and
    // then reads it CANCELLED, so the quota is given back once.
    let Some(mut r) = fetch_redemption::<D>(tx.conn(), project, By::Id(id), true).await? else {
        return Ok(None);
    };
    if r.status == TxStatus::Cancelled {
        return Ok(Some(r));
    }
    if let Some(code) = &r.code {
        super::codes::release_code::<D>(tx.conn(), project, code).await?;
    }
    // Same key order as the redeem that charged them.
    marks::give_back::<D>(tx.conn(), project, &r.quotas, id, false).await?;
    r.status = TxStatus::Cancelled;
    r.cancelled_date = Some(at);
    for action in &mut r.action_txs {
        action.status = TxStatus::Cancelled;
    }
    let sql = Sql::new(
        "UPDATE redemption SET status = $3, cancelled_date = $4, action_txs = $5 \
         WHERE project_id = $1 AND id = $2",
    )
    .bind(project)
    .bind(id)
    .bind(r.status.as_str())
    .bind(at)
    .bind(Json(action_txs_json(&r.action_txs)?));
    execute::<D>(tx.conn(), &sql).await?;
    super::outbox::append::<D>(tx.conn(), &OutboxEvent::for_redemption(&r)).await?;
    tx.commit().await?;
    Ok(Some(r))
}

/// Appends the list's `WHERE` clause (shared by the page and its count).
fn push_filters(sql: &mut Sql, project: &str, query: &RedemptionQuery) {
    sql.push(" WHERE project_id = ").push_bind(project);
    if let Some(code) = &query.campaign_code {
        sql.push(" AND campaign_code = ").push_bind(code);
    }
    if let Some(user) = &query.user_id {
        sql.push(" AND user_id = ").push_bind(user);
    }
}

async fn try_list<D: Dialect>(
    db: &D,
    project: &str,
    query: &RedemptionQuery,
) -> Result<Page<Redemption>, Abort> {
    // One snapshot for the page, its charges and its total.
    let mut tx = db.begin_read().await?;
    let mut count = Sql::new("SELECT COUNT(*) AS n FROM redemption");
    push_filters(&mut count, project, query);
    let total: i64 = match row::<D>(tx.conn(), &count).await? {
        Some(row) => row.col("n")?,
        None => 0,
    };
    let (limit, offset) = limit_offset(query.page, query.size);
    let mut select = Sql::new(format!("SELECT {REDEMPTION_COLUMNS} FROM redemption"));
    push_filters(&mut select, project, query);
    select
        .push(" ORDER BY created_date DESC, id DESC LIMIT ")
        .push_bind(limit)
        .push(" OFFSET ")
        .push_bind(offset);
    let mut items = rows::<D>(tx.conn(), &select)
        .await?
        .iter()
        .map(redemption_from_row)
        .collect::<Result<Vec<_>>>()?;
    attach_charges::<D>(tx.conn(), project, &mut items).await?;
    tx.commit().await?;
    Ok(Page {
        items,
        page: query.page,
        size: query.size,
        total: u64::try_from(total).unwrap_or_default(),
    })
}

/// [`RedemptionStore::cancel_redemption`](crate::store::RedemptionStore::cancel_redemption).
pub(crate) async fn cancel_redemption<D: Dialect>(
    db: &D,
    project: &str,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<Option<Redemption>> {
    retry::<D, _, _, _>(|| try_cancel(db, project, id, at)).await
}

/// [`RedemptionStore::redemption`](crate::store::RedemptionStore::redemption).
pub(crate) async fn redemption<D: Dialect>(
    db: &D,
    project: &str,
    id: Uuid,
) -> Result<Option<Redemption>> {
    retry::<D, _, _, _>(|| async move {
        let mut conn = acquire(db).await?;
        fetch_redemption::<D>(&mut conn, project, By::Id(id), false).await
    })
    .await
}

/// [`RedemptionStore::redemption_by_key`](crate::store::RedemptionStore::redemption_by_key).
pub(crate) async fn redemption_by_key<D: Dialect>(
    db: &D,
    project: &str,
    key: &str,
) -> Result<Option<Redemption>> {
    retry::<D, _, _, _>(|| async move {
        let mut conn = acquire(db).await?;
        fetch_redemption::<D>(&mut conn, project, By::Key(key), false).await
    })
    .await
}

/// [`RedemptionStore::list_redemptions`](crate::store::RedemptionStore::list_redemptions).
pub(crate) async fn list_redemptions<D: Dialect>(
    db: &D,
    project: &str,
    query: &RedemptionQuery,
) -> Result<Page<Redemption>> {
    retry::<D, _, _, _>(|| try_list(db, project, query)).await
}

/// [`RedemptionStore::quota_usage`](crate::store::RedemptionStore::quota_usage).
pub(crate) async fn quota_usage<D: Dialect>(
    db: &D,
    project: &str,
    keys: &[String],
) -> Result<HashMap<String, Decimal>> {
    retry::<D, _, _, _>(|| async move {
        let mut out = HashMap::new();
        if keys.is_empty() {
            return Ok(out);
        }
        let mut conn = acquire(db).await?;
        for chunk in keys.chunks(IN_CHUNK) {
            let mut sql = Sql::new(
                "SELECT quota_key, used FROM quota_usage WHERE project_id = $1 AND quota_key IN (",
            )
            .bind(project);
            sql.push_list(chunk).push(")");
            for row in rows::<D>(&mut conn, &sql).await? {
                out.insert(row.col("quota_key")?, row.col("used")?);
            }
        }
        Ok(out)
    })
    .await
}

/// [`RedemptionStore::counter_usage`](crate::store::RedemptionStore::counter_usage).
pub(crate) async fn counter_usage<D: Dialect>(
    db: &D,
    project: &str,
    counters: &[crate::store::Counter],
    at: DateTime<Utc>,
) -> Result<Vec<crate::store::CounterUsage>> {
    if counters.is_empty() {
        return Ok(Vec::new());
    }
    retry::<D, _, _, _>(|| async move {
        // One snapshot for usage and marks: one statement when the keys
        // fit in one (a search's), else a read transaction.
        if marks::counter_usage_is_one_statement(counters) {
            let mut conn = acquire(db).await?;
            return marks::counter_usage::<D>(&mut conn, project, counters, at).await;
        }
        let mut tx = db.begin_read().await?;
        let out = marks::counter_usage::<D>(tx.conn(), project, counters, at).await?;
        tx.commit().await?;
        Ok(out)
    })
    .await
}

/// [`RedemptionStore::charged_keys`](crate::store::RedemptionStore::charged_keys).
pub(crate) async fn charged_keys<D: Dialect>(
    db: &D,
    project: &str,
    after: Option<i64>,
) -> Result<crate::store::ChargedKeys> {
    // The cursor first: a key committed after it is read now or next time.
    let cursor = Sql::new(D::CHARGED_CURSOR);
    let mut keys =
        Sql::new("SELECT quota_key FROM quota_usage WHERE project_id = $1").bind(project);
    if let Some(after) = after {
        keys.push(" AND ")
            .push(D::CHARGED_ORDER)
            .push(" > ")
            .push_bind(after);
    }
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        let cursor: i64 = match rows::<D>(&mut conn, &cursor).await?.first() {
            Some(row) => row.col("cursor").map_err(Abort::Fail)?,
            None => 0,
        };
        let keys = rows::<D>(&mut conn, &keys)
            .await?
            .iter()
            .map(|row| row.col("quota_key"))
            .collect::<Result<_>>()
            .map_err(Abort::Fail)?;
        Ok(crate::store::ChargedKeys { keys, cursor })
    })
    .await
}

/// [`RedemptionStore::quota_usage_by_prefix`](crate::store::RedemptionStore::quota_usage_by_prefix).
pub(crate) async fn quota_usage_by_prefix<D: Dialect>(
    db: &D,
    project: &str,
    prefix: &str,
    after: Option<&str>,
    limit: u32,
) -> Result<Vec<(String, Decimal)>> {
    // A range of the primary key (project_id, quota_key), which compares
    // bytewise in both dialects (SQLite's BINARY, PostgreSQL's COLLATE "C"):
    // the order of Rust's `str`. Each bound is in the statement only when
    // there is one, so that both are index conditions in every plan.
    let mut sql =
        Sql::new("SELECT quota_key, used FROM quota_usage WHERE project_id = $1").bind(project);
    match after {
        Some(after) if after >= prefix => sql.push(" AND quota_key > ").push_bind(after),
        _ => sql.push(" AND quota_key >= ").push_bind(prefix),
    };
    if let Some(end) = crate::store::prefix_end(prefix) {
        sql.push(" AND quota_key < ").push_bind(end);
    }
    sql.push(" ORDER BY quota_key LIMIT ")
        .push_bind(i64::from(limit));
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        rows::<D>(&mut conn, &sql)
            .await?
            .iter()
            .map(|row| Ok((row.col("quota_key")?, row.col("used")?)))
            .collect::<Result<_>>()
            .map_err(Abort::Fail)
    })
    .await
}

/// [`RedemptionStore::campaign_quota_usage`](crate::store::RedemptionStore::campaign_quota_usage).
pub(crate) async fn campaign_quota_usage<D: Dialect>(
    db: &D,
    project: &str,
    campaign_id: Uuid,
) -> Result<Vec<QuotaUsage>> {
    // One row per key: its usage, and the limit of the campaign's latest
    // charge of it (a later edit of the campaign may have changed it).
    let sql = Sql::new(
        "SELECT quota_key, used, quota_limit FROM ( \
            SELECT c.quota_key, u.used, c.quota_limit, ROW_NUMBER() OVER ( \
                PARTITION BY c.quota_key ORDER BY r.created_date DESC, r.id DESC) AS latest \
            FROM redemption r \
            JOIN redemption_charge c ON c.project_id = r.project_id AND c.redemption_id = r.id \
            LEFT JOIN quota_usage u ON u.project_id = c.project_id AND u.quota_key = c.quota_key \
            WHERE r.project_id = $1 AND r.campaign_id = $2) AS charged \
         WHERE latest = 1 ORDER BY quota_key",
    )
    .bind(project)
    .bind(campaign_id);
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        rows::<D>(&mut conn, &sql)
            .await?
            .iter()
            .map(|row| {
                Ok(QuotaUsage {
                    key: row.col("quota_key")?,
                    used: row.col::<Option<Decimal>>("used")?.unwrap_or_default(),
                    limit: Some(row.col("quota_limit")?),
                    window: None,
                    held: None,
                })
            })
            .collect::<Result<_>>()
            .map_err(Abort::Fail)
    })
    .await
}
