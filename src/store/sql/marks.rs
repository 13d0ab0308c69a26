//! Charges that count for a time, for every SQL dialect: rolling quota
//! windows and the calendar charges of holds (table `quota_mark`; its
//! migration, `0090_quota_windows_and_holds.sql`, explains the model).
//!
//! Locks, per key and in the plan's key order (so two writers cannot
//! deadlock): a calendar charge runs the dialect's guard
//! ([`Dialect::charge`]), which first gives back the key's hold charges
//! expired at the charge's instant; a rolling charge first locks the key's
//! `quota_usage` row (created with `used` 0), then sums the marks that
//! count in its window — a statement that starts after the lock is held,
//! so it sees every mark committed before — and adds its own only if the
//! sum stays within the limit.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use super::dialect::{execute, row, rows, Abort, Conn, Dialect};
use super::query::{Sql, SqlRow};
use crate::core::campaign::{QuotaCharge, QuotaWindow};
use crate::store::{Counter, CounterUsage};
use crate::Error;

/// Most bound values in one `IN (…)` list.
const IN_CHUNK: usize = 500;

fn seconds(window: Option<QuotaWindow>) -> i64 {
    window.map_or(0, QuotaWindow::seconds)
}

/// The usage of one key, when it was ever charged.
pub(crate) async fn usage<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    key: &str,
) -> Result<Option<Decimal>, Abort> {
    let sql = Sql::new("SELECT used FROM quota_usage WHERE project_id = $1 AND quota_key = $2")
        .bind(project)
        .bind(key);
    match row::<D>(conn, &sql).await? {
        Some(row) => Ok(Some(row.col("used")?)),
        None => Ok(None),
    }
}

/// A charge refused: its key, the usage it saw and its limit.
pub(crate) type Refusal = (String, Decimal, Decimal);

/// Gives back the calendar charges to `key` of holds expired at `at` and
/// returns their sum (the caller subtracts it from the key's usage, under
/// the same write transaction).
pub(crate) async fn sweep_key<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    key: &str,
    at: DateTime<Utc>,
) -> Result<Decimal, Abort> {
    let sql = Sql::new(
        "DELETE FROM quota_mark WHERE project_id = $1 AND quota_key = $2 \
         AND window_seconds = 0 AND expires_at <= $3 RETURNING amount",
    )
    .bind(project)
    .bind(key)
    .bind(at);
    let mut back = Decimal::ZERO;
    for row in rows::<D>(conn, &sql).await? {
        back = back
            .checked_add(row.col("amount")?)
            .ok_or_else(|| Error::internal("held amounts out of decimal range"))?;
    }
    Ok(back)
}

/// Locks the `quota_usage` row of `key` until the transaction ends,
/// creating it (with `used` 0) when absent.
async fn lock_key<D: Dialect>(conn: &mut Conn<D>, project: &str, key: &str) -> Result<(), Abort> {
    let sql = Sql::new(
        "INSERT INTO quota_usage (project_id, quota_key, used) VALUES ($1, $2, $3) \
         ON CONFLICT (project_id, quota_key) DO UPDATE SET used = quota_usage.used",
    )
    .bind(project)
    .bind(key)
    .bind(Decimal::ZERO);
    execute::<D>(conn, &sql).await?;
    Ok(())
}

/// The sum of the marks of a rolling counter that count at `at`.
async fn window_sum<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    key: &str,
    window: QuotaWindow,
    at: DateTime<Utc>,
) -> Result<Decimal, Abort> {
    let sql = Sql::new(
        "SELECT amount FROM quota_mark WHERE project_id = $1 AND quota_key = $2 \
         AND window_seconds = $3 AND counts_until > $4 \
         AND (expires_at IS NULL OR expires_at > $4)",
    )
    .bind(project)
    .bind(key)
    .bind(window.seconds())
    .bind(at);
    let mut sum = Decimal::ZERO;
    for row in rows::<D>(conn, &sql).await? {
        // Beyond Decimal's range is beyond any limit.
        sum = sum.checked_add(row.col("amount")?).unwrap_or(Decimal::MAX);
    }
    Ok(sum)
}

async fn insert_mark<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    c: &QuotaCharge,
    owner: Uuid,
    at: DateTime<Utc>,
    expires: Option<DateTime<Utc>>,
) -> Result<(), Abort> {
    let sql = Sql::new(
        "INSERT INTO quota_mark (project_id, quota_key, window_seconds, owner_id, amount, \
         charged_at, counts_until, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(project)
    .bind(&c.key)
    .bind(seconds(c.window))
    .bind(owner)
    .bind(c.amount)
    .bind(at)
    .bind(c.window.map(|w| w.until(at)))
    .bind(expires);
    execute::<D>(conn, &sql).await?;
    Ok(())
}

/// Applies every charge of `owner` at `at` (a hold's until `expires`)
/// inside the caller's write transaction, in order, each only if its
/// counter stays within its limit. The first refused: the caller must roll
/// back (earlier charges were written).
pub(crate) async fn charge_all<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    charges: &[QuotaCharge],
    owner: Uuid,
    at: DateTime<Utc>,
    expires: Option<DateTime<Utc>>,
) -> Result<Option<Refusal>, Abort> {
    for c in charges {
        match c.window {
            None => {
                if !D::charge(conn, project, c, at).await? {
                    let used = usage::<D>(conn, project, &c.key).await?.unwrap_or_default();
                    return Ok(Some((c.key.clone(), used, c.limit)));
                }
                if expires.is_some() {
                    insert_mark::<D>(conn, project, c, owner, at, expires).await?;
                }
            }
            Some(window) => {
                lock_key::<D>(conn, project, &c.key).await?;
                let used = window_sum::<D>(conn, project, &c.key, window, at).await?;
                if used.checked_add(c.amount).is_none_or(|t| t > c.limit) {
                    return Ok(Some((c.key.clone(), used, c.limit)));
                }
                insert_mark::<D>(conn, project, c, owner, at, expires).await?;
            }
        }
    }
    Ok(None)
}

/// Deletes the mark of `owner` on the counter of `c`: whether there was one.
async fn delete_mark<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    c: &QuotaCharge,
    owner: Uuid,
) -> Result<bool, Abort> {
    let sql = Sql::new(
        "DELETE FROM quota_mark WHERE project_id = $1 AND quota_key = $2 \
         AND window_seconds = $3 AND owner_id = $4",
    )
    .bind(project)
    .bind(&c.key)
    .bind(seconds(c.window))
    .bind(owner);
    Ok(execute::<D>(conn, &sql).await? > 0)
}

/// Gives back what `owner` charged, inside the caller's write transaction:
/// a rolling charge's mark is deleted; a calendar charge is subtracted
/// from its key's usage — for a hold (`held`), only while its mark is
/// there (an expired one was given back when its mark was swept).
pub(crate) async fn give_back<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    charges: &[QuotaCharge],
    owner: Uuid,
    held: bool,
) -> Result<(), Abort> {
    for c in charges {
        if c.window.is_some() {
            delete_mark::<D>(conn, project, c, owner).await?;
        } else if !held || delete_mark::<D>(conn, project, c, owner).await? {
            D::release(conn, project, c).await?;
        }
    }
    Ok(())
}

/// Turns a hold's marks into its redemption's, inside the caller's write
/// transaction: a calendar charge's mark is deleted (its amount stays in
/// the usage, now the redemption's), a rolling one passes to the
/// redemption and stops expiring. `false` when a mark is gone: a charge
/// that saw the hold expired (by its clock) gave it back, so the hold is
/// expired and the caller must roll back.
pub(crate) async fn confirm_marks<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    charges: &[QuotaCharge],
    hold: Uuid,
    redemption: Uuid,
) -> Result<bool, Abort> {
    for c in charges {
        let kept = if c.window.is_some() {
            let sql = Sql::new(
                "UPDATE quota_mark SET owner_id = $5, expires_at = NULL \
                 WHERE project_id = $1 AND quota_key = $2 AND window_seconds = $3 \
                 AND owner_id = $4",
            )
            .bind(project)
            .bind(&c.key)
            .bind(seconds(c.window))
            .bind(hold)
            .bind(redemption);
            execute::<D>(conn, &sql).await? > 0
        } else {
            delete_mark::<D>(conn, project, c, hold).await?
        };
        if !kept {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The usage of each counter at `at` ([`RedemptionStore::counter_usage`](crate::store::RedemptionStore::counter_usage)),
/// read in the caller's transaction (or, with at most [`IN_CHUNK`] keys of
/// each kind, on a pooled connection: one statement, so one snapshot).
pub(crate) async fn counter_usage<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    counters: &[Counter],
    at: DateTime<Utc>,
) -> Result<Vec<CounterUsage>, Abort> {
    use std::collections::HashMap;
    let mut out = vec![CounterUsage::default(); counters.len()];
    let mut index: HashMap<(&str, i64), Vec<usize>> = HashMap::new();
    for (i, c) in counters.iter().enumerate() {
        index
            .entry((c.key.as_str(), seconds(c.window)))
            .or_default()
            .push(i);
    }
    let (calendar, rolling) = usage_keys(counters);
    let add = |out: &mut Vec<CounterUsage>, key: &str, w: i64, used: Decimal, held: Decimal| {
        for &i in index.get(&(key, w)).into_iter().flatten() {
            let u = &mut out[i];
            u.used = u.used.checked_add(used).unwrap_or(Decimal::MAX);
            u.held = u.held.checked_add(held).unwrap_or(Decimal::MAX);
        }
    };
    let chunks = calendar.len().max(rolling.len()).div_ceil(IN_CHUNK);
    for n in 0..chunks {
        let part = |keys: &[&'_ str]| -> Vec<String> {
            keys.iter()
                .skip(n * IN_CHUNK)
                .take(IN_CHUNK)
                .map(|k| (*k).to_owned())
                .collect()
        };
        let sql = usage_statement(project, &part(&calendar), &part(&rolling), at);
        for r in rows::<D>(conn, &sql).await? {
            let key: String = r.col("quota_key")?;
            let amount: Decimal = r.col("amount")?;
            match r.col::<i32>("kind")? {
                // The key's row in quota_usage: calendar charges.
                0 => add(&mut out, &key, 0, amount, Decimal::ZERO),
                // A hold's calendar charge: counted in `used` while it
                // lives, given back once it expired.
                1 => {
                    let expires: Option<DateTime<Utc>> = r.col("expires_at")?;
                    if expires.is_some_and(|e| e <= at) {
                        add(&mut out, &key, 0, -amount, Decimal::ZERO);
                    } else {
                        add(&mut out, &key, 0, Decimal::ZERO, amount);
                    }
                }
                // A mark counting in its rolling window.
                _ => {
                    let w: i64 = r.col("window_seconds")?;
                    let held = if r.col::<Option<DateTime<Utc>>>("expires_at")?.is_some() {
                        amount
                    } else {
                        Decimal::ZERO
                    };
                    add(&mut out, &key, w, amount, held);
                }
            }
        }
    }
    Ok(out)
}

/// The distinct keys of `counters`, sorted: of calendar counters, and of
/// rolling ones.
fn usage_keys(counters: &[Counter]) -> (Vec<&str>, Vec<&str>) {
    let mut calendar: Vec<&str> = Vec::new();
    let mut rolling: Vec<&str> = Vec::new();
    for c in counters {
        if c.window.is_none() {
            calendar.push(&c.key);
        } else {
            rolling.push(&c.key);
        }
    }
    for keys in [&mut calendar, &mut rolling] {
        keys.sort_unstable();
        keys.dedup();
    }
    (calendar, rolling)
}

/// Whether [`counter_usage`] of `counters` is one statement (no
/// transaction needed for one snapshot).
pub(crate) fn counter_usage_is_one_statement(counters: &[Counter]) -> bool {
    let (calendar, rolling) = usage_keys(counters);
    calendar.len() <= IN_CHUNK && rolling.len() <= IN_CHUNK
}

/// One statement reading the usage of `calendar` keys (their `quota_usage`
/// rows, `kind` 0, and their holds' calendar marks, `kind` 1) and the marks
/// of `rolling` keys counting at `at` (`kind` 2).
fn usage_statement(
    project: &str,
    calendar: &[String],
    rolling: &[String],
    at: DateTime<Utc>,
) -> Sql {
    let mut sql = Sql::new("").bind(project);
    let mut parts = 0;
    if !rolling.is_empty() {
        sql = sql.bind(at);
        sql.push(
            "SELECT quota_key, 2 AS kind, window_seconds, amount, expires_at FROM quota_mark \
             WHERE project_id = $1 AND window_seconds > 0 AND counts_until > $2 \
             AND (expires_at IS NULL OR expires_at > $2) AND quota_key IN (",
        );
        sql.push_list(rolling).push(")");
        parts += 1;
    }
    if !calendar.is_empty() {
        if parts > 0 {
            sql.push(" UNION ALL ");
        }
        sql.push(
            "SELECT quota_key, 1 AS kind, window_seconds, amount, expires_at FROM quota_mark \
             WHERE project_id = $1 AND window_seconds = 0 AND quota_key IN (",
        );
        sql.push_list(calendar).push(")");
        // Last: its untyped NULL takes the type of the marks' column.
        sql.push(
            " UNION ALL SELECT quota_key, 0 AS kind, 0 AS window_seconds, used AS amount, \
             NULL AS expires_at FROM quota_usage WHERE project_id = $1 AND quota_key IN (",
        );
        sql.push_list(calendar).push(")");
    }
    sql
}

/// Cleans up what expired by `at` in `project` (see
/// [`HoldStore::sweep_quota_marks`](crate::store::HoldStore::sweep_quota_marks)),
/// in the caller's write transaction.
pub(crate) async fn sweep<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    at: DateTime<Utc>,
) -> Result<u64, Abort> {
    // Calendar hold charges expired: given back key by key, in key order.
    let sql = Sql::new(
        "SELECT DISTINCT quota_key FROM quota_mark WHERE project_id = $1 \
         AND window_seconds = 0 AND expires_at <= $2 ORDER BY quota_key",
    )
    .bind(project)
    .bind(at);
    let keys: Vec<String> = rows::<D>(conn, &sql)
        .await?
        .iter()
        .map(|r| r.col("quota_key"))
        .collect::<crate::Result<_>>()?;
    let mut removed = 0;
    for key in keys {
        let back = sweep_key::<D>(conn, project, &key, at).await?;
        let charge = QuotaCharge {
            key,
            amount: back,
            limit: Decimal::ZERO,
            window: None,
        };
        D::release(conn, project, &charge).await?;
        removed += 1;
    }
    // Rolling marks no window counts any more, and expired holds' ones (a
    // live hold's mark stays: the hold may still be confirmed).
    let sql = Sql::new(
        "DELETE FROM quota_mark WHERE project_id = $1 AND window_seconds > 0 \
         AND ((counts_until <= $2 AND expires_at IS NULL) OR expires_at <= $2)",
    )
    .bind(project)
    .bind(at);
    removed += execute::<D>(conn, &sql).await?;
    Ok(removed)
}
