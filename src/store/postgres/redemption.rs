//! Redemptions and quota usage in PostgreSQL.
//!
//! A redeem is one READ COMMITTED transaction:
//!
//! 1. Insert the redemption record with `ON CONFLICT (project_id,
//!    idempotency_key) DO NOTHING`. The unique index is the idempotency
//!    check: when another transaction holds the same key uncommitted, the
//!    insert waits for it; if it commits, nothing is inserted and the stored
//!    record is returned as a replay; if it rolls back, the insert goes on.
//! 2. Charge every quota key, in the plan's order (sorted by key, so two
//!    redeems lock shared keys in the same order and cannot deadlock), with
//!    one guarded upsert each. The guard is in the statement, so the stored
//!    usage can never pass the limit whatever runs concurrently: a row that
//!    fails the `WHERE` is not updated and nothing is returned.
//! 3. Insert the charges. Commit.
//!
//! A charge that returns nothing rolls the whole transaction back.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Postgres, QueryBuilder};
use uuid::Uuid;

use super::campaign::col;
use super::{retry, Abort, PostgresStore};
use crate::core::campaign::{QuotaCharge, QuotaUsage, Redemption, TxStatus};
use crate::store::sql::calls::store_calls;
use crate::store::sql::{action_txs_from_json, action_txs_json, db_error, limit_offset};
use crate::store::{Page, RedeemOutcome, RedemptionPlan, RedemptionQuery, RedemptionStore};
use crate::{Error, Result};

/// The columns a [`Redemption`] (without its charges) is read from.
const REDEMPTION_COLUMNS: &str = "id, project_id, campaign_id, campaign_code, campaign_version, \
     status, user_id, channel, idempotency_key, action_txs::text AS action_txs, created_date, \
     cancelled_date, request_fingerprint";

/// Adds `$3` to the usage of key `$2` only if the result stays within `$4`.
/// The insert branch is guarded too (`WHERE $3 <= $4`): an amount above the
/// limit on a key never charged inserts nothing. (For a key that exists that
/// filter is implied by the update's guard, usage never being negative.)
const CHARGE: &str = "INSERT INTO quota_usage (project_id, quota_key, used) \
     SELECT $1, $2, $3 WHERE $3 <= $4 \
     ON CONFLICT (project_id, quota_key) \
     DO UPDATE SET used = quota_usage.used + EXCLUDED.used \
     WHERE quota_usage.used + EXCLUDED.used <= $4 \
     RETURNING used";

fn redemption_from_row(row: &PgRow) -> Result<Redemption> {
    Ok(Redemption {
        id: col(row, "id")?,
        project_id: col(row, "project_id")?,
        campaign_id: col(row, "campaign_id")?,
        campaign_code: col(row, "campaign_code")?,
        campaign_version: col(row, "campaign_version")?,
        status: TxStatus::parse(&col::<String>(row, "status")?),
        user_id: col(row, "user_id")?,
        channel: col(row, "channel")?,
        idempotency_key: col(row, "idempotency_key")?,
        request_fingerprint: col(row, "request_fingerprint")?,
        action_txs: action_txs_from_json(&col::<String>(row, "action_txs")?)?,
        quotas: Vec::new(),
        created_date: col(row, "created_date")?,
        cancelled_date: col(row, "cancelled_date")?,
    })
}

/// Fills in the charges of `redemptions` (all of one project).
async fn attach_charges(
    conn: &mut PgConnection,
    project: &str,
    redemptions: &mut [Redemption],
) -> Result<(), Abort> {
    if redemptions.is_empty() {
        return Ok(());
    }
    let index: HashMap<Uuid, usize> = redemptions
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id, i))
        .collect();
    let ids: Vec<Uuid> = index.keys().copied().collect();
    let rows = sqlx::query(
        "SELECT redemption_id, quota_key, amount, quota_limit FROM redemption_charge \
         WHERE project_id = $1 AND redemption_id = ANY($2) ORDER BY redemption_id, position",
    )
    .bind(project)
    .bind(ids)
    .fetch_all(conn)
    .await?;
    for row in rows {
        let id: Uuid = col(&row, "redemption_id")?;
        let charge = QuotaCharge {
            key: col(&row, "quota_key")?,
            amount: col(&row, "amount")?,
            limit: col(&row, "quota_limit")?,
        };
        if let Some(&i) = index.get(&id) {
            redemptions[i].quotas.push(charge);
        }
    }
    Ok(())
}

/// One redemption with its charges, found by `column = value`;
/// `for_update` locks its row until the transaction ends.
async fn fetch_redemption<V>(
    conn: &mut PgConnection,
    project: &str,
    column: &'static str,
    value: V,
    for_update: bool,
) -> Result<Option<Redemption>, Abort>
where
    V: for<'q> sqlx::Encode<'q, Postgres> + sqlx::Type<Postgres> + Send,
{
    let lock = if for_update { " FOR UPDATE" } else { "" };
    let sql = format!(
        "SELECT {REDEMPTION_COLUMNS} FROM redemption WHERE project_id = $1 AND {column} = $2{lock}"
    );
    let row = sqlx::query(&sql)
        .bind(project)
        .bind(value)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(row) = row else { return Ok(None) };
    let mut found = [redemption_from_row(&row)?];
    attach_charges(conn, project, &mut found).await?;
    let [r] = found;
    Ok(Some(r))
}

async fn try_redeem(store: &PostgresStore, r: &Redemption) -> Result<RedeemOutcome, Abort> {
    let mut tx = store.pool().begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO redemption (id, project_id, campaign_id, campaign_code, campaign_version, \
         status, user_id, channel, idempotency_key, action_txs, created_date, cancelled_date, \
         request_fingerprint) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13) \
         ON CONFLICT (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING",
    )
    .bind(r.id)
    .bind(&r.project_id)
    .bind(r.campaign_id)
    .bind(&r.campaign_code)
    .bind(r.campaign_version)
    .bind(r.status.as_str())
    .bind(&r.user_id)
    .bind(&r.channel)
    .bind(&r.idempotency_key)
    .bind(action_txs_json(&r.action_txs)?)
    .bind(r.created_date)
    .bind(r.cancelled_date)
    .bind(&r.request_fingerprint)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if inserted == 0 {
        tx.rollback().await?;
        // Only the idempotency key can make the insert do nothing, and the
        // redemption holding it has committed (READ COMMITTED: this new
        // statement sees it).
        let key = r.idempotency_key.as_deref().unwrap_or_default();
        let mut conn = store.pool().acquire().await?;
        return match fetch_redemption(&mut conn, &r.project_id, "idempotency_key", key, false)
            .await?
        {
            Some(stored) => Ok(RedeemOutcome::Replayed(stored)),
            None => Err(Abort::Fail(Error::internal(
                "idempotency key claimed by a redemption that cannot be read",
            ))),
        };
    }
    for charge in &r.quotas {
        let charged: Option<Decimal> = sqlx::query_scalar(CHARGE)
            .bind(&r.project_id)
            .bind(&charge.key)
            .bind(charge.amount)
            .bind(charge.limit)
            .fetch_optional(&mut *tx)
            .await?;
        if charged.is_none() {
            let used: Option<Decimal> = sqlx::query_scalar(
                "SELECT used FROM quota_usage WHERE project_id = $1 AND quota_key = $2",
            )
            .bind(&r.project_id)
            .bind(&charge.key)
            .fetch_optional(&mut *tx)
            .await?;
            tx.rollback().await?;
            return Ok(RedeemOutcome::QuotaExceeded {
                key: charge.key.clone(),
                used: used.unwrap_or_default(),
                limit: charge.limit,
            });
        }
    }
    if !r.quotas.is_empty() {
        let positions: Vec<i32> = (0..r.quotas.len())
            .map(|i| i32::try_from(i).map_err(Error::internal))
            .collect::<Result<_>>()?;
        sqlx::query(
            "INSERT INTO redemption_charge \
             (project_id, redemption_id, position, quota_key, amount, quota_limit) \
             SELECT $1, $2, t.position, t.quota_key, t.amount, t.quota_limit \
             FROM UNNEST($3::int4[], $4::text[], $5::numeric[], $6::numeric[]) \
             AS t (position, quota_key, amount, quota_limit)",
        )
        .bind(&r.project_id)
        .bind(r.id)
        .bind(positions)
        .bind(r.quotas.iter().map(|c| c.key.clone()).collect::<Vec<_>>())
        .bind(r.quotas.iter().map(|c| c.amount).collect::<Vec<_>>())
        .bind(r.quotas.iter().map(|c| c.limit).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(RedeemOutcome::Recorded(r.clone()))
}

async fn try_cancel(
    store: &PostgresStore,
    project: &str,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<Option<Redemption>, Abort> {
    let mut tx = store.pool().begin().await?;
    // FOR UPDATE: a concurrent cancel of the same redemption waits here and
    // then reads it CANCELLED, so the quota is given back once.
    let Some(mut r) = fetch_redemption(&mut tx, project, "id", id, true).await? else {
        return Ok(None);
    };
    if r.status == TxStatus::Cancelled {
        return Ok(Some(r));
    }
    // Same key order as the redeem that charged them.
    for charge in &r.quotas {
        sqlx::query(
            "UPDATE quota_usage SET used = used - $3 WHERE project_id = $1 AND quota_key = $2",
        )
        .bind(project)
        .bind(&charge.key)
        .bind(charge.amount)
        .execute(&mut *tx)
        .await?;
    }
    r.status = TxStatus::Cancelled;
    r.cancelled_date = Some(at);
    for action in &mut r.action_txs {
        action.status = TxStatus::Cancelled;
    }
    sqlx::query(
        "UPDATE redemption SET status = $3, cancelled_date = $4, action_txs = $5::jsonb \
         WHERE project_id = $1 AND id = $2",
    )
    .bind(project)
    .bind(id)
    .bind(r.status.as_str())
    .bind(at)
    .bind(action_txs_json(&r.action_txs)?)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Some(r))
}

async fn try_list(
    store: &PostgresStore,
    project: &str,
    query: &RedemptionQuery,
) -> Result<Page<Redemption>, Abort> {
    fn push_filters(qb: &mut QueryBuilder<'_, Postgres>, project: &str, query: &RedemptionQuery) {
        qb.push(" WHERE project_id = ")
            .push_bind(project.to_owned());
        if let Some(code) = &query.campaign_code {
            qb.push(" AND campaign_code = ").push_bind(code.clone());
        }
        if let Some(user) = &query.user_id {
            qb.push(" AND user_id = ").push_bind(user.clone());
        }
    }
    // One snapshot for the page, its charges and its total.
    let mut tx = store
        .pool()
        .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .await?;
    let mut count = QueryBuilder::<Postgres>::new("SELECT COUNT(*) FROM redemption");
    push_filters(&mut count, project, query);
    let total: i64 = count.build_query_scalar().fetch_one(&mut *tx).await?;
    let (limit, offset) = limit_offset(query.page, query.size);
    let mut select =
        QueryBuilder::<Postgres>::new(format!("SELECT {REDEMPTION_COLUMNS} FROM redemption"));
    push_filters(&mut select, project, query);
    select
        .push(" ORDER BY created_date DESC, id DESC LIMIT ")
        .push_bind(limit)
        .push(" OFFSET ")
        .push_bind(offset);
    let rows = select.build().fetch_all(&mut *tx).await?;
    let mut items = rows
        .iter()
        .map(redemption_from_row)
        .collect::<Result<Vec<_>>>()?;
    attach_charges(&mut tx, project, &mut items).await?;
    tx.commit().await?;
    Ok(Page {
        items,
        page: query.page,
        size: query.size,
        total: u64::try_from(total).unwrap_or_default(),
    })
}

store_calls!(impl RedemptionStore for PostgresStore);

/// The calls of [`RedemptionStore`], which `store_calls!` wraps (see
/// `crate::store::sql::calls`).
impl PostgresStore {
    async fn redeem(&self, plan: &RedemptionPlan) -> Result<RedeemOutcome> {
        retry(|| try_redeem(self, &plan.redemption)).await
    }

    async fn cancel_redemption(
        &self,
        project: &str,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Option<Redemption>> {
        retry(|| try_cancel(self, project, id, at)).await
    }

    async fn redemption(&self, project: &str, id: Uuid) -> Result<Option<Redemption>> {
        retry(|| async move {
            let mut conn = self.pool().acquire().await?;
            fetch_redemption(&mut conn, project, "id", id, false).await
        })
        .await
    }

    async fn redemption_by_key(
        &self,
        project: &str,
        idempotency_key: &str,
    ) -> Result<Option<Redemption>> {
        retry(|| async move {
            let mut conn = self.pool().acquire().await?;
            fetch_redemption(
                &mut conn,
                project,
                "idempotency_key",
                idempotency_key,
                false,
            )
            .await
        })
        .await
    }

    async fn list_redemptions(
        &self,
        project: &str,
        query: &RedemptionQuery,
    ) -> Result<Page<Redemption>> {
        retry(|| try_list(self, project, query)).await
    }

    async fn quota_usage(
        &self,
        project: &str,
        keys: &[String],
    ) -> Result<HashMap<String, Decimal>> {
        if keys.is_empty() {
            return Ok(HashMap::new());
        }
        let rows: Vec<(String, Decimal)> = sqlx::query_as(
            "SELECT quota_key, used FROM quota_usage WHERE project_id = $1 AND quota_key = ANY($2)",
        )
        .bind(project)
        .bind(keys)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        Ok(rows.into_iter().collect())
    }

    async fn campaign_quota_usage(
        &self,
        project: &str,
        campaign_id: Uuid,
    ) -> Result<Vec<QuotaUsage>> {
        // One row per key: its usage, and the limit of the campaign's latest
        // charge of it (a later edit of the campaign may have changed it).
        let rows: Vec<(String, Option<Decimal>, Decimal)> = sqlx::query_as(
            "SELECT DISTINCT ON (c.quota_key) c.quota_key, u.used, c.quota_limit \
             FROM redemption r \
             JOIN redemption_charge c ON c.project_id = r.project_id AND c.redemption_id = r.id \
             LEFT JOIN quota_usage u ON u.project_id = c.project_id AND u.quota_key = c.quota_key \
             WHERE r.project_id = $1 AND r.campaign_id = $2 \
             ORDER BY c.quota_key, r.created_date DESC, r.id DESC",
        )
        .bind(project)
        .bind(campaign_id)
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|(key, used, limit)| QuotaUsage {
                key,
                used: used.unwrap_or_default(),
                limit: Some(limit),
            })
            .collect())
    }
}
