//! Redemptions and quota usage in SQLite.
//!
//! Decimals are TEXT here (see the migration), so the quota guard cannot be
//! a SQL comparison: it reads the usage, checks and adds in Rust with
//! `Decimal`, and writes it back — all inside one `BEGIN IMMEDIATE`
//! transaction, which holds SQLite's single write lock from its first
//! statement. No other writer, in this process or another, can run between
//! the read and the write, so the check cannot be overtaken.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use sqlx::sqlite::SqliteRow;
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};
use uuid::Uuid;

use super::campaign::{col, from_micros, micros, parse_uuid};
use super::SqliteStore;
use crate::core::campaign::{QuotaCharge, QuotaUsage, Redemption, TxStatus};
use crate::store::sql::calls::store_calls;
use crate::store::sql::{action_txs_from_json, action_txs_json, corrupt, db_error, limit_offset};
use crate::store::{Page, RedeemOutcome, RedemptionPlan, RedemptionQuery, RedemptionStore};
use crate::{Error, Result};

/// The columns a [`Redemption`] (without its charges) is read from.
const REDEMPTION_COLUMNS: &str = "id, project_id, campaign_id, campaign_code, campaign_version, \
     status, user_id, channel, idempotency_key, action_txs, created_date, cancelled_date, \
     request_fingerprint";

/// Most bound values in one `IN (…)` list (SQLite allows 32766 per statement).
const IN_CHUNK: usize = 500;

fn parse_decimal(s: &str) -> Result<Decimal> {
    s.parse().map_err(|e| corrupt("decimal", e))
}

fn redemption_from_row(row: &SqliteRow) -> Result<Redemption> {
    Ok(Redemption {
        id: parse_uuid(&col::<String>(row, "id")?)?,
        project_id: col(row, "project_id")?,
        campaign_id: parse_uuid(&col::<String>(row, "campaign_id")?)?,
        campaign_code: col(row, "campaign_code")?,
        campaign_version: col(row, "campaign_version")?,
        status: TxStatus::parse(&col::<String>(row, "status")?),
        user_id: col(row, "user_id")?,
        channel: col(row, "channel")?,
        idempotency_key: col(row, "idempotency_key")?,
        request_fingerprint: col(row, "request_fingerprint")?,
        action_txs: action_txs_from_json(&col::<String>(row, "action_txs")?)?,
        quotas: Vec::new(),
        created_date: from_micros(col(row, "created_date")?)?,
        cancelled_date: col::<Option<i64>>(row, "cancelled_date")?
            .map(from_micros)
            .transpose()?,
    })
}

/// Fills in the charges of `redemptions` (all of one project).
async fn attach_charges(
    conn: &mut SqliteConnection,
    project: &str,
    redemptions: &mut [Redemption],
) -> Result<()> {
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, r) in redemptions.iter().enumerate() {
        index.insert(r.id.to_string(), i);
    }
    let ids: Vec<String> = index.keys().cloned().collect();
    for chunk in ids.chunks(IN_CHUNK) {
        let mut qb = QueryBuilder::<Sqlite>::new(
            "SELECT redemption_id, quota_key, amount, quota_limit FROM redemption_charge \
             WHERE project_id = ",
        );
        qb.push_bind(project.to_owned())
            .push(" AND redemption_id IN (");
        let mut list = qb.separated(", ");
        for id in chunk {
            list.push_bind(id.clone());
        }
        qb.push(") ORDER BY redemption_id, position");
        for row in qb.build().fetch_all(&mut *conn).await.map_err(db_error)? {
            let id: String = col(&row, "redemption_id")?;
            let charge = QuotaCharge {
                key: col(&row, "quota_key")?,
                amount: parse_decimal(&col::<String>(&row, "amount")?)?,
                limit: parse_decimal(&col::<String>(&row, "quota_limit")?)?,
            };
            if let Some(&i) = index.get(&id) {
                redemptions[i].quotas.push(charge);
            }
        }
    }
    Ok(())
}

/// One redemption with its charges, found by `column = value`.
async fn fetch_redemption(
    conn: &mut SqliteConnection,
    project: &str,
    column: &'static str,
    value: &str,
) -> Result<Option<Redemption>> {
    let sql = format!(
        "SELECT {REDEMPTION_COLUMNS} FROM redemption WHERE project_id = ? AND {column} = ?"
    );
    let row = sqlx::query(&sql)
        .bind(project)
        .bind(value)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db_error)?;
    let Some(row) = row else { return Ok(None) };
    let mut found = [redemption_from_row(&row)?];
    attach_charges(conn, project, &mut found).await?;
    let [r] = found;
    Ok(Some(r))
}

/// The usage of one key, when it was ever charged.
async fn usage(conn: &mut SqliteConnection, project: &str, key: &str) -> Result<Option<Decimal>> {
    let used: Option<String> =
        sqlx::query_scalar("SELECT used FROM quota_usage WHERE project_id = ? AND quota_key = ?")
            .bind(project)
            .bind(key)
            .fetch_optional(conn)
            .await
            .map_err(db_error)?;
    used.as_deref().map(parse_decimal).transpose()
}

async fn set_usage(
    conn: &mut SqliteConnection,
    project: &str,
    key: &str,
    used: Decimal,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO quota_usage (project_id, quota_key, used) VALUES (?, ?, ?) \
         ON CONFLICT (project_id, quota_key) DO UPDATE SET used = excluded.used",
    )
    .bind(project)
    .bind(key)
    .bind(used.to_string())
    .execute(conn)
    .await
    .map_err(db_error)?;
    Ok(())
}

async fn insert_redemption(conn: &mut SqliteConnection, r: &Redemption) -> Result<()> {
    sqlx::query(
        "INSERT INTO redemption (id, project_id, campaign_id, campaign_code, campaign_version, \
         status, user_id, channel, idempotency_key, action_txs, created_date, cancelled_date, \
         request_fingerprint) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(r.id.to_string())
    .bind(&r.project_id)
    .bind(r.campaign_id.to_string())
    .bind(&r.campaign_code)
    .bind(r.campaign_version)
    .bind(r.status.as_str())
    .bind(&r.user_id)
    .bind(&r.channel)
    .bind(&r.idempotency_key)
    .bind(action_txs_json(&r.action_txs)?)
    .bind(micros(r.created_date))
    .bind(r.cancelled_date.map(micros))
    .bind(&r.request_fingerprint)
    .execute(&mut *conn)
    .await
    .map_err(db_error)?;
    for (position, charge) in r.quotas.iter().enumerate() {
        sqlx::query(
            "INSERT INTO redemption_charge \
             (project_id, redemption_id, position, quota_key, amount, quota_limit) \
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(&r.project_id)
        .bind(r.id.to_string())
        .bind(i64::try_from(position).map_err(Error::internal)?)
        .bind(&charge.key)
        .bind(charge.amount.to_string())
        .bind(charge.limit.to_string())
        .execute(&mut *conn)
        .await
        .map_err(db_error)?;
    }
    Ok(())
}

store_calls!(impl RedemptionStore for SqliteStore);

/// The calls of [`RedemptionStore`], which `store_calls!` wraps (see
/// `crate::store::sql::calls`).
impl SqliteStore {
    async fn redeem(&self, plan: &RedemptionPlan) -> Result<RedeemOutcome> {
        let r = &plan.redemption;
        let mut w = self.write().await?;
        if let Some(key) = &r.idempotency_key {
            if let Some(stored) =
                fetch_redemption(&mut w.tx, &r.project_id, "idempotency_key", key).await?
            {
                return Ok(RedeemOutcome::Replayed(stored));
            }
        }
        // Check every charge before writing any: all or nothing. (Returning
        // early drops the transaction, which rolls it back.)
        let mut totals = Vec::with_capacity(r.quotas.len());
        for charge in &r.quotas {
            let used = usage(&mut w.tx, &r.project_id, &charge.key)
                .await?
                .unwrap_or_default();
            match used.checked_add(charge.amount) {
                Some(total) if total <= charge.limit => totals.push(total),
                _ => {
                    return Ok(RedeemOutcome::QuotaExceeded {
                        key: charge.key.clone(),
                        used,
                        limit: charge.limit,
                    })
                }
            }
        }
        for (charge, total) in r.quotas.iter().zip(totals) {
            set_usage(&mut w.tx, &r.project_id, &charge.key, total).await?;
        }
        insert_redemption(&mut w.tx, r).await?;
        w.commit().await?;
        Ok(RedeemOutcome::Recorded(r.clone()))
    }

    async fn cancel_redemption(
        &self,
        project: &str,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Option<Redemption>> {
        let mut w = self.write().await?;
        let Some(mut r) = fetch_redemption(&mut w.tx, project, "id", &id.to_string()).await? else {
            return Ok(None);
        };
        if r.status == TxStatus::Cancelled {
            return Ok(Some(r));
        }
        for charge in &r.quotas {
            if let Some(used) = usage(&mut w.tx, project, &charge.key).await? {
                let back = used
                    .checked_sub(charge.amount)
                    .ok_or_else(|| Error::internal("quota usage out of decimal range"))?;
                set_usage(&mut w.tx, project, &charge.key, back).await?;
            }
        }
        r.status = TxStatus::Cancelled;
        r.cancelled_date = Some(at);
        for tx in &mut r.action_txs {
            tx.status = TxStatus::Cancelled;
        }
        sqlx::query(
            "UPDATE redemption SET status = ?, cancelled_date = ?, action_txs = ? \
             WHERE project_id = ? AND id = ?",
        )
        .bind(r.status.as_str())
        .bind(micros(at))
        .bind(action_txs_json(&r.action_txs)?)
        .bind(project)
        .bind(id.to_string())
        .execute(&mut *w.tx)
        .await
        .map_err(db_error)?;
        w.commit().await?;
        Ok(Some(r))
    }

    async fn redemption(&self, project: &str, id: Uuid) -> Result<Option<Redemption>> {
        let mut conn = self.pool().acquire().await.map_err(db_error)?;
        fetch_redemption(&mut conn, project, "id", &id.to_string()).await
    }

    async fn redemption_by_key(
        &self,
        project: &str,
        idempotency_key: &str,
    ) -> Result<Option<Redemption>> {
        let mut conn = self.pool().acquire().await.map_err(db_error)?;
        fetch_redemption(&mut conn, project, "idempotency_key", idempotency_key).await
    }

    async fn list_redemptions(
        &self,
        project: &str,
        query: &RedemptionQuery,
    ) -> Result<Page<Redemption>> {
        fn push_filters(qb: &mut QueryBuilder<'_, Sqlite>, project: &str, query: &RedemptionQuery) {
            qb.push(" WHERE project_id = ")
                .push_bind(project.to_owned());
            if let Some(code) = &query.campaign_code {
                qb.push(" AND campaign_code = ").push_bind(code.clone());
            }
            if let Some(user) = &query.user_id {
                qb.push(" AND user_id = ").push_bind(user.clone());
            }
        }
        let mut tx = self.read().await?;
        let mut count = QueryBuilder::<Sqlite>::new("SELECT COUNT(*) FROM redemption");
        push_filters(&mut count, project, query);
        let total: i64 = count
            .build_query_scalar()
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;
        let (limit, offset) = limit_offset(query.page, query.size);
        let mut select =
            QueryBuilder::<Sqlite>::new(format!("SELECT {REDEMPTION_COLUMNS} FROM redemption"));
        push_filters(&mut select, project, query);
        select
            .push(" ORDER BY created_date DESC, id DESC LIMIT ")
            .push_bind(limit)
            .push(" OFFSET ")
            .push_bind(offset);
        let rows = select.build().fetch_all(&mut *tx).await.map_err(db_error)?;
        let mut items = rows
            .iter()
            .map(redemption_from_row)
            .collect::<Result<Vec<_>>>()?;
        attach_charges(&mut tx, project, &mut items).await?;
        tx.commit().await.map_err(db_error)?;
        Ok(Page {
            items,
            page: query.page,
            size: query.size,
            total: u64::try_from(total).unwrap_or_default(),
        })
    }

    async fn quota_usage(
        &self,
        project: &str,
        keys: &[String],
    ) -> Result<HashMap<String, Decimal>> {
        let mut out = HashMap::new();
        if keys.is_empty() {
            return Ok(out);
        }
        let mut conn = self.pool().acquire().await.map_err(db_error)?;
        for chunk in keys.chunks(IN_CHUNK) {
            let mut qb = QueryBuilder::<Sqlite>::new(
                "SELECT quota_key, used FROM quota_usage WHERE project_id = ",
            );
            qb.push_bind(project.to_owned()).push(" AND quota_key IN (");
            let mut list = qb.separated(", ");
            for key in chunk {
                list.push_bind(key.clone());
            }
            qb.push(")");
            for row in qb.build().fetch_all(&mut *conn).await.map_err(db_error)? {
                let used = parse_decimal(&col::<String>(&row, "used")?)?;
                out.insert(col(&row, "quota_key")?, used);
            }
        }
        Ok(out)
    }

    async fn campaign_quota_usage(
        &self,
        project: &str,
        campaign_id: Uuid,
    ) -> Result<Vec<QuotaUsage>> {
        // One row per key: its usage, and the limit of the campaign's latest
        // charge of it (a later edit of the campaign may have changed it).
        let rows = sqlx::query(
            "SELECT quota_key, used, quota_limit FROM ( \
                SELECT c.quota_key, u.used, c.quota_limit, ROW_NUMBER() OVER ( \
                    PARTITION BY c.quota_key ORDER BY r.created_date DESC, r.id DESC) AS latest \
                FROM redemption r \
                JOIN redemption_charge c ON c.project_id = r.project_id AND c.redemption_id = r.id \
                LEFT JOIN quota_usage u ON u.project_id = c.project_id AND u.quota_key = c.quota_key \
                WHERE r.project_id = ? AND r.campaign_id = ?) \
             WHERE latest = 1 ORDER BY quota_key",
        )
        .bind(project)
        .bind(campaign_id.to_string())
        .fetch_all(self.pool())
        .await
        .map_err(db_error)?;
        rows.iter()
            .map(|row| {
                let used = col::<Option<String>>(row, "used")?
                    .as_deref()
                    .map(parse_decimal)
                    .transpose()?
                    .unwrap_or_default();
                let limit = parse_decimal(&col::<String>(row, "quota_limit")?)?;
                Ok(QuotaUsage {
                    key: col(row, "quota_key")?,
                    used,
                    limit: Some(limit),
                })
            })
            .collect()
    }
}
