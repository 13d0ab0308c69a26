//! Quota holds, for every SQL dialect (table `quota_hold`; the charges
//! that count while a hold lives are marks, `marks.rs`).
//!
//! Placing a hold is a redeem's transaction with a hold row in place of
//! the redemption; confirming and releasing lock the hold row first, so
//! that two of them on one hold run one after the other and the second
//! sees what the first did.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::dialect::{acquire, execute, read_all, retry, row, Abort, Conn, Dialect};
use super::query::{Json, Sql, SqlRow};
use super::redemption::{fetch_redemption, insert_charges, insert_redemption, By};
use super::{action_txs_from_json, action_txs_json, corrupt, marks};
use crate::core::campaign::{Hold, HoldStatus, QuotaCharge, QuotaWindow};
use crate::store::{Confirmation, HoldOutcome};
use crate::{Error, Result};

const HOLD_COLUMNS: &str = "id, project_id, redemption_id, campaign_id, campaign_code, \
     campaign_version, status, user_id, channel, action_txs, quotas, created_date, expires_at, \
     ended_date, code";

/// A charge as stored in the `quotas` JSON column: decimals as strings, so
/// every digit is kept.
#[derive(Serialize, Deserialize)]
struct StoredCharge {
    key: String,
    amount: Decimal,
    limit: Decimal,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    window: Option<QuotaWindow>,
}

fn quotas_json(charges: &[QuotaCharge]) -> Result<String> {
    let stored: Vec<StoredCharge> = charges
        .iter()
        .map(|c| StoredCharge {
            key: c.key.clone(),
            amount: c.amount,
            limit: c.limit,
            window: c.window,
        })
        .collect();
    serde_json::to_string(&stored).map_err(Error::internal)
}

fn quotas_from_json(json: &str) -> Result<Vec<QuotaCharge>> {
    let stored: Vec<StoredCharge> =
        serde_json::from_str(json).map_err(|e| corrupt("hold quotas", e))?;
    Ok(stored
        .into_iter()
        .map(|c| QuotaCharge {
            key: c.key,
            amount: c.amount,
            limit: c.limit,
            window: c.window,
        })
        .collect())
}

fn hold_from_row(row: &impl SqlRow) -> Result<Hold> {
    Ok(Hold {
        id: row.col("id")?,
        project_id: row.col("project_id")?,
        status: HoldStatus::parse(&row.col::<String>("status")?),
        redemption_id: row.col("redemption_id")?,
        campaign_id: row.col("campaign_id")?,
        campaign_code: row.col("campaign_code")?,
        campaign_version: row.col("campaign_version")?,
        user_id: row.col("user_id")?,
        channel: row.col("channel")?,
        action_txs: action_txs_from_json(&row.col::<Json<String>>("action_txs")?.0)?,
        quotas: quotas_from_json(&row.col::<Json<String>>("quotas")?.0)?,
        created_date: row.col("created_date")?,
        expires_at: row.col("expires_at")?,
        ended_date: row.col("ended_date")?,
        code: row.col("code")?,
    })
}

/// One hold; `lock` locks its row until the transaction ends (where the
/// dialect locks rows).
async fn fetch_hold<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    id: Uuid,
    lock: bool,
) -> Result<Option<Hold>, Abort> {
    let lock = if lock { D::FOR_UPDATE } else { "" };
    let sql = Sql::new(format!(
        "SELECT {HOLD_COLUMNS} FROM quota_hold WHERE project_id = $1 AND id = $2{lock}"
    ))
    .bind(project)
    .bind(id);
    match row::<D>(conn, &sql).await? {
        Some(row) => Ok(Some(hold_from_row(&row)?)),
        None => Ok(None),
    }
}

async fn insert_hold<D: Dialect>(conn: &mut Conn<D>, h: &Hold) -> Result<(), Abort> {
    let sql = Sql::new(format!(
        "INSERT INTO quota_hold ({HOLD_COLUMNS}, code_held) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
    ))
    .bind(h.id)
    .bind(&h.project_id)
    .bind(h.redemption_id)
    .bind(h.campaign_id)
    .bind(&h.campaign_code)
    .bind(h.campaign_version)
    .bind(h.status.as_str())
    .bind(&h.user_id)
    .bind(&h.channel)
    .bind(Json(action_txs_json(&h.action_txs)?))
    .bind(Json(quotas_json(&h.quotas)?))
    .bind(h.created_date)
    .bind(h.expires_at)
    .bind(h.ended_date)
    .bind(&h.code)
    .bind(i32::from(h.code.is_some()));
    execute::<D>(conn, &sql).await?;
    Ok(())
}

async fn end_hold<D: Dialect>(
    conn: &mut Conn<D>,
    h: &mut Hold,
    status: HoldStatus,
    at: DateTime<Utc>,
) -> Result<(), Abort> {
    let sql = Sql::new(
        "UPDATE quota_hold SET status = $3, ended_date = $4 WHERE project_id = $1 AND id = $2",
    )
    .bind(&h.project_id)
    .bind(h.id)
    .bind(status.as_str())
    .bind(at);
    execute::<D>(conn, &sql).await?;
    h.status = status;
    h.ended_date = Some(at);
    Ok(())
}

/// Ends a hold's reservation of its code's use (the use stays taken):
/// whether it still had it (not given back as expired).
async fn unreserve_code<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    id: Uuid,
) -> Result<bool, Abort> {
    let sql = Sql::new(
        "UPDATE quota_hold SET code_held = 0 WHERE project_id = $1 AND id = $2 AND code_held = 1",
    )
    .bind(project)
    .bind(id);
    Ok(execute::<D>(conn, &sql).await? == 1)
}

async fn try_place<D: Dialect>(db: &D, h: &Hold) -> Result<HoldOutcome, Abort> {
    let mut tx = db.begin_write().await?;
    // The code first, always before the quota keys: one lock order.
    if let Some(code) = &h.code {
        if let Some(refusal) = super::codes::take_code::<D>(
            tx.conn(),
            &h.project_id,
            h.campaign_id,
            code,
            h.created_date,
        )
        .await?
        {
            tx.rollback().await?;
            return Ok(HoldOutcome::CodeRefused(refusal));
        }
    }
    let refused = marks::charge_all::<D>(
        tx.conn(),
        &h.project_id,
        &h.quotas,
        h.id,
        h.created_date,
        Some(h.expires_at),
    )
    .await?;
    if let Some((key, used, limit)) = refused {
        tx.rollback().await?;
        return Ok(HoldOutcome::QuotaExceeded { key, used, limit });
    }
    insert_hold::<D>(tx.conn(), h).await?;
    tx.commit().await?;
    Ok(HoldOutcome::Placed(Box::new(h.clone())))
}

async fn try_confirm<D: Dialect>(
    db: &D,
    project: &str,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<Option<Confirmation>, Abort> {
    let mut tx = db.begin_write().await?;
    let Some(mut hold) = fetch_hold::<D>(tx.conn(), project, id, true).await? else {
        return Ok(None);
    };
    match hold.status {
        HoldStatus::Confirmed => {
            let r = fetch_redemption::<D>(tx.conn(), project, By::Id(hold.redemption_id), false)
                .await?
                .ok_or_else(|| corrupt("quota_hold", "confirmed without its redemption"))?;
            return Ok(Some(Confirmation::Confirmed(r, true)));
        }
        HoldStatus::Released => return Ok(Some(Confirmation::Released(hold))),
        _ if !hold.is_live(at) => return Ok(Some(Confirmation::Expired(hold))),
        _ => {}
    }
    // The code's use passes to the redemption, unless a use of the code
    // that saw the hold expired (another clock) gave it back.
    if hold.code.is_some() && !unreserve_code::<D>(tx.conn(), project, id).await? {
        tx.rollback().await?;
        return Ok(Some(Confirmation::Expired(hold)));
    }
    let redemption = hold.redemption(at);
    if !marks::confirm_marks::<D>(tx.conn(), project, &hold.quotas, id, redemption.id).await? {
        tx.rollback().await?;
        return Ok(Some(Confirmation::Expired(hold)));
    }
    if !insert_redemption::<D>(tx.conn(), &redemption).await? {
        return Err(Abort::Fail(Error::internal(
            "a hold's redemption was not recorded",
        )));
    }
    insert_charges::<D>(tx.conn(), &redemption).await?;
    end_hold::<D>(tx.conn(), &mut hold, HoldStatus::Confirmed, at).await?;
    let event = crate::core::outbox::OutboxEvent::for_redemption(&redemption);
    super::outbox::append::<D>(tx.conn(), &event).await?;
    tx.commit().await?;
    Ok(Some(Confirmation::Confirmed(redemption, false)))
}

async fn try_release<D: Dialect>(
    db: &D,
    project: &str,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<Option<Hold>, Abort> {
    let mut tx = db.begin_write().await?;
    let Some(mut hold) = fetch_hold::<D>(tx.conn(), project, id, true).await? else {
        return Ok(None);
    };
    if hold.status != HoldStatus::Held {
        return Ok(Some(hold));
    }
    // The hold's row, then the code's, then the quota keys: one lock order.
    if let Some(code) = &hold.code {
        if unreserve_code::<D>(tx.conn(), project, id).await? {
            super::codes::release_code::<D>(tx.conn(), project, code).await?;
        }
    }
    marks::give_back::<D>(tx.conn(), project, &hold.quotas, id, true).await?;
    end_hold::<D>(tx.conn(), &mut hold, HoldStatus::Released, at).await?;
    tx.commit().await?;
    Ok(Some(hold))
}

/// [`HoldStore::place_hold`](crate::store::HoldStore::place_hold).
pub(crate) async fn place_hold<D: Dialect>(db: &D, hold: &Hold) -> Result<HoldOutcome> {
    retry::<D, _, _, _>(|| try_place(db, hold)).await
}

/// [`HoldStore::confirm_hold`](crate::store::HoldStore::confirm_hold).
pub(crate) async fn confirm_hold<D: Dialect>(
    db: &D,
    project: &str,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<Option<Confirmation>> {
    retry::<D, _, _, _>(|| try_confirm(db, project, id, at)).await
}

/// [`HoldStore::release_hold`](crate::store::HoldStore::release_hold).
pub(crate) async fn release_hold<D: Dialect>(
    db: &D,
    project: &str,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<Option<Hold>> {
    retry::<D, _, _, _>(|| try_release(db, project, id, at)).await
}

/// [`HoldStore::hold`](crate::store::HoldStore::hold).
pub(crate) async fn hold<D: Dialect>(db: &D, project: &str, id: Uuid) -> Result<Option<Hold>> {
    retry::<D, _, _, _>(|| async move {
        let mut conn = acquire(db).await?;
        fetch_hold::<D>(&mut conn, project, id, false).await
    })
    .await
}

/// [`HoldStore::live_holds`](crate::store::HoldStore::live_holds).
pub(crate) async fn live_holds<D: Dialect>(
    db: &D,
    project: &str,
    campaign_id: Uuid,
    at: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<Hold>> {
    let sql = Sql::new(format!(
        "SELECT {HOLD_COLUMNS} FROM quota_hold WHERE project_id = $1 AND campaign_id = $2 \
         AND status = $3 AND expires_at > $4 ORDER BY expires_at, id LIMIT $5"
    ))
    .bind(project)
    .bind(campaign_id)
    .bind(HoldStatus::Held.as_str())
    .bind(at)
    .bind(i64::from(limit));
    read_all(db, &sql, hold_from_row).await
}

/// [`HoldStore::sweep_quota_marks`](crate::store::HoldStore::sweep_quota_marks).
pub(crate) async fn sweep_quota_marks<D: Dialect>(
    db: &D,
    project: &str,
    at: DateTime<Utc>,
) -> Result<u64> {
    retry::<D, _, _, _>(|| async move {
        let mut tx = db.begin_write().await?;
        super::codes::reclaim_all::<D>(tx.conn(), project, at).await?;
        let n = marks::sweep::<D>(tx.conn(), project, at).await?;
        tx.commit().await?;
        Ok(n)
    })
    .await
}

/// Implements [`HoldStore`](crate::store::HoldStore) for a SQL store type
/// (a part of `store_calls!`, see `calls.rs`: writes through
/// `write_call`, reads through `read_call`).
macro_rules! hold_calls {
    ($store:ty) => {
        impl $crate::store::HoldStore for $store {
            async fn place_hold(
                &self,
                hold: &$crate::core::campaign::Hold,
            ) -> $crate::Result<$crate::store::HoldOutcome> {
                let hold = hold.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::hold::place_hold(&s, &hold).await
                })
                .await
            }

            async fn confirm_hold(
                &self,
                project: &str,
                id: uuid::Uuid,
                at: chrono::DateTime<chrono::Utc>,
            ) -> $crate::Result<Option<$crate::store::Confirmation>> {
                let project = project.to_owned();
                self.write_call(move |s| async move {
                    $crate::store::sql::hold::confirm_hold(&s, &project, id, at).await
                })
                .await
            }

            async fn release_hold(
                &self,
                project: &str,
                id: uuid::Uuid,
                at: chrono::DateTime<chrono::Utc>,
            ) -> $crate::Result<Option<$crate::core::campaign::Hold>> {
                let project = project.to_owned();
                self.write_call(move |s| async move {
                    $crate::store::sql::hold::release_hold(&s, &project, id, at).await
                })
                .await
            }

            async fn hold(
                &self,
                project: &str,
                id: uuid::Uuid,
            ) -> $crate::Result<Option<$crate::core::campaign::Hold>> {
                self.read_call($crate::store::sql::hold::hold(self, project, id))
                    .await
            }

            async fn live_holds(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
                at: chrono::DateTime<chrono::Utc>,
                limit: u32,
            ) -> $crate::Result<Vec<$crate::core::campaign::Hold>> {
                self.read_call($crate::store::sql::hold::live_holds(
                    self,
                    project,
                    campaign_id,
                    at,
                    limit,
                ))
                .await
            }

            async fn sweep_quota_marks(
                &self,
                project: &str,
                at: chrono::DateTime<chrono::Utc>,
            ) -> $crate::Result<u64> {
                let project = project.to_owned();
                self.write_call(move |s| async move {
                    $crate::store::sql::hold::sweep_quota_marks(&s, &project, at).await
                })
                .await
            }
        }
    };
}

pub(crate) use hold_calls;
