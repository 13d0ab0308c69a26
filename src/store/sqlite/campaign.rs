//! Campaign definitions and the catalog version in SQLite.

use chrono::{DateTime, Utc};
use sqlx::sqlite::SqliteRow;
use sqlx::{QueryBuilder, Row, Sqlite, SqliteConnection};
use uuid::Uuid;

use super::SqliteStore;
use crate::core::campaign::{Campaign, CampaignStatus};
use crate::store::campaign::too_many_campaigns;
use crate::store::sql::calls::store_calls;
use crate::store::sql::{
    campaign_not_found, campaign_order_by, corrupt, db_error, duplicate_id, duplicate_ref_code,
    is_unique_violation, limit_offset, quotas_from_json, quotas_json, rules_from_json, rules_json,
    stacking_from_json, stacking_json, stale_version, SearchColumns,
};
use crate::store::{CampaignQuery, CampaignStore, Page, Period};
use crate::Result;

/// The columns a [`Campaign`] is read from, in [`campaign_from_row`]'s terms.
const CAMPAIGN_COLUMNS: &str = "id, project_id, ref_code, name, description, image_url, \
     start_date, end_date, status, priority, channel, group_name, quotas, rules, version, \
     created_by, last_modified_by, created_date, last_modified_date, stacking, time_zone";

/// A timestamp as stored: microseconds since the epoch (see the migration).
pub(super) fn micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

/// A stored timestamp.
pub(super) fn from_micros(m: i64) -> Result<DateTime<Utc>> {
    DateTime::from_timestamp_micros(m).ok_or_else(|| corrupt("timestamp", m))
}

/// A stored UUID.
pub(super) fn parse_uuid(s: &str) -> Result<Uuid> {
    Uuid::parse_str(s).map_err(|e| corrupt("id", e))
}

/// One column of a row; a value of the wrong type is a corrupt store.
pub(super) fn col<'r, T>(row: &'r SqliteRow, name: &str) -> Result<T>
where
    T: sqlx::Decode<'r, Sqlite> + sqlx::Type<Sqlite>,
{
    row.try_get(name).map_err(|e| corrupt(name, e))
}

fn campaign_from_row(row: &SqliteRow) -> Result<Campaign> {
    Ok(Campaign {
        id: parse_uuid(&col::<String>(row, "id")?)?,
        project_id: col(row, "project_id")?,
        ref_code: col(row, "ref_code")?,
        name: col(row, "name")?,
        description: col(row, "description")?,
        image_url: col(row, "image_url")?,
        start_date: from_micros(col(row, "start_date")?)?,
        end_date: from_micros(col(row, "end_date")?)?,
        status: CampaignStatus::parse(&col::<String>(row, "status")?),
        priority: col(row, "priority")?,
        channel: col(row, "channel")?,
        group_name: col(row, "group_name")?,
        stacking: stacking_from_json(col::<Option<String>>(row, "stacking")?.as_deref())?,
        time_zone: col(row, "time_zone")?,
        quotas: quotas_from_json(&col::<String>(row, "quotas")?)?,
        rules: rules_from_json(&col::<String>(row, "rules")?)?,
        version: col(row, "version")?,
        // Computed by the service for the time of each response; not stored.
        active: false,
        created_by: col(row, "created_by")?,
        last_modified_by: col(row, "last_modified_by")?,
        created_date: from_micros(col(row, "created_date")?)?,
        last_modified_date: from_micros(col(row, "last_modified_date")?)?,
    })
}

/// Whether another campaign of the project holds `campaign`'s refCode.
async fn ref_code_taken(conn: &mut SqliteConnection, campaign: &Campaign) -> Result<bool> {
    let row =
        sqlx::query("SELECT 1 FROM campaign WHERE project_id = ? AND ref_code = ? AND id <> ?")
            .bind(&campaign.project_id)
            .bind(&campaign.ref_code)
            .bind(campaign.id.to_string())
            .fetch_optional(conn)
            .await
            .map_err(db_error)?;
    Ok(row.is_some())
}

/// Bumps the project's catalog version; called in every campaign write
/// transaction.
async fn bump_catalog(conn: &mut SqliteConnection, project: &str) -> Result<()> {
    sqlx::query(
        "INSERT INTO campaign_catalog (project_id, version) VALUES (?, 1) \
         ON CONFLICT (project_id) DO UPDATE SET version = campaign_catalog.version + 1",
    )
    .bind(project)
    .execute(conn)
    .await
    .map_err(db_error)?;
    Ok(())
}

/// Appends the list's `WHERE` clause (shared by the page and its count).
fn push_filters(qb: &mut QueryBuilder<'_, Sqlite>, project: &str, query: &CampaignQuery) {
    qb.push(" WHERE project_id = ")
        .push_bind(project.to_owned());
    if let Some(status) = &query.status {
        qb.push(" AND status = ")
            .push_bind(status.as_str().to_owned());
    }
    if let Some(channel) = &query.channel {
        qb.push(" AND channel = ").push_bind(channel.clone());
    }
    if let Some(group) = &query.group {
        qb.push(" AND group_name = ").push_bind(group.clone());
    }
    if let Some((period, at)) = query.period {
        let at = micros(at);
        match period {
            Period::Current => qb
                .push(" AND start_date <= ")
                .push_bind(at)
                .push(" AND end_date > ")
                .push_bind(at),
            Period::Scheduled => qb.push(" AND start_date > ").push_bind(at),
            Period::Ended => qb.push(" AND end_date <= ").push_bind(at),
        };
    }
    if let Some(q) = &query.q {
        // instr, not LIKE: the needle is taken literally (no % or _ to
        // escape). The status is ASCII, so SQLite's lower() folds it right.
        let q = q.to_lowercase();
        qb.push(" AND (instr(search_name, ")
            .push_bind(q.clone())
            .push(") > 0 OR instr(search_ref_code, ")
            .push_bind(q.clone())
            .push(") > 0 OR instr(search_group_name, ")
            .push_bind(q.clone())
            .push(") > 0 OR instr(lower(status), ")
            .push_bind(q)
            .push(") > 0)");
    }
}

store_calls!(impl CampaignStore for SqliteStore);

/// The calls of [`CampaignStore`], which `store_calls!` wraps (see
/// `crate::store::sql::calls`).
impl SqliteStore {
    async fn insert_campaign_within(&self, campaign: &Campaign, max: u64) -> Result<()> {
        // The write transaction holds SQLite's one write lock: the count
        // cannot change before the insert commits.
        let mut w = self.write().await?;
        if max != u64::MAX && count_in(&mut *w.tx, &campaign.project_id).await? >= max {
            return Err(too_many_campaigns(max));
        }
        if ref_code_taken(&mut w.tx, campaign).await? {
            return Err(duplicate_ref_code(campaign));
        }
        let c = campaign;
        let search = SearchColumns::of(c);
        let inserted = sqlx::query(
            "INSERT INTO campaign (id, project_id, ref_code, name, description, image_url, \
             start_date, end_date, status, priority, channel, group_name, quotas, rules, version, \
             created_by, last_modified_by, created_date, last_modified_date, \
             search_name, search_ref_code, search_group_name, stacking, time_zone) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(c.id.to_string())
        .bind(&c.project_id)
        .bind(&c.ref_code)
        .bind(&c.name)
        .bind(&c.description)
        .bind(&c.image_url)
        .bind(micros(c.start_date))
        .bind(micros(c.end_date))
        .bind(c.status.as_str())
        .bind(c.priority)
        .bind(&c.channel)
        .bind(&c.group_name)
        .bind(quotas_json(&c.quotas)?)
        .bind(rules_json(c)?)
        .bind(c.version)
        .bind(&c.created_by)
        .bind(&c.last_modified_by)
        .bind(micros(c.created_date))
        .bind(micros(c.last_modified_date))
        .bind(search.name)
        .bind(search.ref_code)
        .bind(search.group_name)
        .bind(stacking_json(c)?)
        .bind(&c.time_zone)
        .execute(&mut *w.tx)
        .await;
        match inserted {
            Ok(_) => {}
            // The write lock is held, so the refCode check above cannot have
            // raced; a unique violation here is the primary key.
            Err(e) if is_unique_violation(&e, "campaign.id") => return Err(duplicate_id()),
            Err(e) => return Err(db_error(e)),
        }
        bump_catalog(&mut w.tx, &c.project_id).await?;
        w.commit().await
    }

    async fn update_campaign(&self, campaign: &Campaign, expected_version: i64) -> Result<()> {
        let c = campaign;
        let mut w = self.write().await?;
        let stored: Option<i64> =
            sqlx::query_scalar("SELECT version FROM campaign WHERE project_id = ? AND id = ?")
                .bind(&c.project_id)
                .bind(c.id.to_string())
                .fetch_optional(&mut *w.tx)
                .await
                .map_err(db_error)?;
        let Some(stored) = stored else {
            return Err(campaign_not_found());
        };
        if stored != expected_version {
            return Err(stale_version(stored, expected_version));
        }
        if ref_code_taken(&mut w.tx, c).await? {
            return Err(duplicate_ref_code(c));
        }
        let search = SearchColumns::of(c);
        sqlx::query(
            "UPDATE campaign SET ref_code = ?, name = ?, description = ?, image_url = ?, \
             start_date = ?, end_date = ?, status = ?, priority = ?, channel = ?, group_name = ?, \
             quotas = ?, rules = ?, version = ?, created_by = ?, last_modified_by = ?, \
             created_date = ?, last_modified_date = ?, \
             search_name = ?, search_ref_code = ?, search_group_name = ?, stacking = ?, \
             time_zone = ? \
             WHERE project_id = ? AND id = ?",
        )
        .bind(&c.ref_code)
        .bind(&c.name)
        .bind(&c.description)
        .bind(&c.image_url)
        .bind(micros(c.start_date))
        .bind(micros(c.end_date))
        .bind(c.status.as_str())
        .bind(c.priority)
        .bind(&c.channel)
        .bind(&c.group_name)
        .bind(quotas_json(&c.quotas)?)
        .bind(rules_json(c)?)
        .bind(c.version)
        .bind(&c.created_by)
        .bind(&c.last_modified_by)
        .bind(micros(c.created_date))
        .bind(micros(c.last_modified_date))
        .bind(search.name)
        .bind(search.ref_code)
        .bind(search.group_name)
        .bind(stacking_json(c)?)
        .bind(&c.time_zone)
        .bind(&c.project_id)
        .bind(c.id.to_string())
        .execute(&mut *w.tx)
        .await
        .map_err(db_error)?;
        bump_catalog(&mut w.tx, &c.project_id).await?;
        w.commit().await
    }

    async fn delete_campaign(&self, project: &str, id: Uuid) -> Result<bool> {
        let mut w = self.write().await?;
        let deleted = sqlx::query("DELETE FROM campaign WHERE project_id = ? AND id = ?")
            .bind(project)
            .bind(id.to_string())
            .execute(&mut *w.tx)
            .await
            .map_err(db_error)?
            .rows_affected()
            > 0;
        if deleted {
            bump_catalog(&mut w.tx, project).await?;
            w.commit().await?;
        }
        Ok(deleted)
    }

    async fn campaign(&self, project: &str, id: Uuid) -> Result<Option<Campaign>> {
        let sql =
            format!("SELECT {CAMPAIGN_COLUMNS} FROM campaign WHERE project_id = ? AND id = ?");
        sqlx::query(&sql)
            .bind(project)
            .bind(id.to_string())
            .fetch_optional(self.pool())
            .await
            .map_err(db_error)?
            .as_ref()
            .map(campaign_from_row)
            .transpose()
    }

    async fn campaign_by_code(&self, project: &str, ref_code: &str) -> Result<Option<Campaign>> {
        let sql = format!(
            "SELECT {CAMPAIGN_COLUMNS} FROM campaign WHERE project_id = ? AND ref_code = ?"
        );
        sqlx::query(&sql)
            .bind(project)
            .bind(ref_code)
            .fetch_optional(self.pool())
            .await
            .map_err(db_error)?
            .as_ref()
            .map(campaign_from_row)
            .transpose()
    }

    async fn list_campaigns(&self, project: &str, query: &CampaignQuery) -> Result<Page<Campaign>> {
        let mut tx = self.read().await?;
        let mut count = QueryBuilder::<Sqlite>::new("SELECT COUNT(*) FROM campaign");
        push_filters(&mut count, project, query);
        let total: i64 = count
            .build_query_scalar()
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;

        let (limit, offset) = limit_offset(query.page, query.size);
        let mut select =
            QueryBuilder::<Sqlite>::new(format!("SELECT {CAMPAIGN_COLUMNS} FROM campaign"));
        push_filters(&mut select, project, query);
        select
            .push(" ")
            .push(campaign_order_by(&query.sort))
            .push(" LIMIT ")
            .push_bind(limit)
            .push(" OFFSET ")
            .push_bind(offset);
        let rows = select.build().fetch_all(&mut *tx).await.map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(Page {
            items: rows.iter().map(campaign_from_row).collect::<Result<_>>()?,
            page: query.page,
            size: query.size,
            total: u64::try_from(total).unwrap_or_default(),
        })
    }

    async fn all_campaigns(&self, project: &str) -> Result<Vec<Campaign>> {
        let sql = format!(
            "SELECT {CAMPAIGN_COLUMNS} FROM campaign WHERE project_id = ? ORDER BY ref_code"
        );
        let rows = sqlx::query(&sql)
            .bind(project)
            .fetch_all(self.pool())
            .await
            .map_err(db_error)?;
        rows.iter().map(campaign_from_row).collect()
    }

    async fn catalog_version(&self, project: &str) -> Result<i64> {
        let v: Option<i64> =
            sqlx::query_scalar("SELECT version FROM campaign_catalog WHERE project_id = ?")
                .bind(project)
                .fetch_optional(self.pool())
                .await
                .map_err(db_error)?;
        Ok(v.unwrap_or(0))
    }

    async fn count_campaigns(&self, project: &str) -> Result<u64> {
        count_in(self.pool(), project).await
    }
}

/// The number of campaigns of `project`, read through `conn`.
async fn count_in<'c>(
    conn: impl sqlx::Executor<'c, Database = Sqlite>,
    project: &str,
) -> Result<u64> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM campaign WHERE project_id = ?")
        .bind(project)
        .fetch_one(conn)
        .await
        .map_err(db_error)?;
    Ok(u64::try_from(n).unwrap_or_default())
}
