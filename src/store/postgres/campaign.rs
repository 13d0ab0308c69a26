//! Campaign definitions and the catalog version in PostgreSQL.

use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Postgres, QueryBuilder, Row};
use uuid::Uuid;

use super::{retry, Abort, PostgresStore};
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

/// The columns a [`Campaign`] is read from; the jsonb documents as text.
const CAMPAIGN_COLUMNS: &str = "id, project_id, ref_code, name, description, image_url, \
     start_date, end_date, status, priority, channel, group_name, quotas::text AS quotas, \
     rules::text AS rules, version, created_by, last_modified_by, created_date, last_modified_date, \
     stacking::text AS stacking, time_zone";

/// One column of a row; a value of the wrong type is a corrupt store.
pub(super) fn col<'r, T>(row: &'r PgRow, name: &str) -> Result<T>
where
    T: sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres>,
{
    row.try_get(name).map_err(|e| corrupt(name, e))
}

fn campaign_from_row(row: &PgRow) -> Result<Campaign> {
    Ok(Campaign {
        id: col(row, "id")?,
        project_id: col(row, "project_id")?,
        ref_code: col(row, "ref_code")?,
        name: col(row, "name")?,
        description: col(row, "description")?,
        image_url: col(row, "image_url")?,
        start_date: col(row, "start_date")?,
        end_date: col(row, "end_date")?,
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
        created_date: col(row, "created_date")?,
        last_modified_date: col(row, "last_modified_date")?,
    })
}

/// Whether another campaign of the project holds `campaign`'s refCode.
async fn ref_code_taken(conn: &mut PgConnection, c: &Campaign) -> Result<bool, Abort> {
    let row =
        sqlx::query("SELECT 1 FROM campaign WHERE project_id = $1 AND ref_code = $2 AND id <> $3")
            .bind(&c.project_id)
            .bind(&c.ref_code)
            .bind(c.id)
            .fetch_optional(conn)
            .await?;
    Ok(row.is_some())
}

/// Bumps the project's catalog version; called in every campaign write
/// transaction (its row lock also orders the project's catalog writes).
async fn bump_catalog(conn: &mut PgConnection, project: &str) -> Result<(), Abort> {
    sqlx::query(
        "INSERT INTO campaign_catalog (project_id, version) VALUES ($1, 1) \
         ON CONFLICT (project_id) DO UPDATE SET version = campaign_catalog.version + 1",
    )
    .bind(project)
    .execute(conn)
    .await?;
    Ok(())
}

/// Maps the unique violations a campaign write can meet. The refCode check
/// before the write runs in the same transaction, but a concurrent insert
/// of the same refCode can still commit between the check and the write;
/// the unique constraint then has the last word.
fn write_conflict(e: sqlx::Error, c: &Campaign) -> Abort {
    if is_unique_violation(&e, "campaign_ref_code_key") {
        Abort::Fail(duplicate_ref_code(c))
    } else if is_unique_violation(&e, "campaign_pkey") {
        Abort::Fail(duplicate_id())
    } else {
        Abort::Db(e)
    }
}

async fn try_insert(store: &PostgresStore, c: &Campaign, max: u64) -> Result<(), Abort> {
    let mut tx = store.pool().begin().await?;
    // The catalog row lock first: the project's creates then run one at a
    // time, and the count below (a new snapshot per statement) sees every
    // create committed before this one.
    bump_catalog(&mut tx, &c.project_id).await?;
    if max != u64::MAX && count_in(&mut *tx, &c.project_id).await? >= max {
        return Err(Abort::Fail(too_many_campaigns(max)));
    }
    if ref_code_taken(&mut tx, c).await? {
        return Err(Abort::Fail(duplicate_ref_code(c)));
    }
    let search = SearchColumns::of(c);
    sqlx::query(
        "INSERT INTO campaign (id, project_id, ref_code, name, description, image_url, \
         start_date, end_date, status, priority, channel, group_name, quotas, rules, version, \
         created_by, last_modified_by, created_date, last_modified_date, \
         search_name, search_ref_code, search_group_name, stacking, time_zone) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::jsonb, $14::jsonb, \
         $15, $16, $17, $18, $19, $20, $21, $22, $23::jsonb, $24)",
    )
    .bind(c.id)
    .bind(&c.project_id)
    .bind(&c.ref_code)
    .bind(&c.name)
    .bind(&c.description)
    .bind(&c.image_url)
    .bind(c.start_date)
    .bind(c.end_date)
    .bind(c.status.as_str())
    .bind(c.priority)
    .bind(&c.channel)
    .bind(&c.group_name)
    .bind(quotas_json(&c.quotas)?)
    .bind(rules_json(c)?)
    .bind(c.version)
    .bind(&c.created_by)
    .bind(&c.last_modified_by)
    .bind(c.created_date)
    .bind(c.last_modified_date)
    .bind(search.name)
    .bind(search.ref_code)
    .bind(search.group_name)
    .bind(stacking_json(c)?)
    .bind(&c.time_zone)
    .execute(&mut *tx)
    .await
    .map_err(|e| write_conflict(e, c))?;
    tx.commit().await?;
    Ok(())
}

async fn try_update(store: &PostgresStore, c: &Campaign, expected: i64) -> Result<(), Abort> {
    let mut tx = store.pool().begin().await?;
    // FOR UPDATE: a concurrent update of the same campaign waits here and
    // then sees the new version, so exactly one of two racing updates with
    // the same expected version wins.
    let stored: Option<i64> = sqlx::query_scalar(
        "SELECT version FROM campaign WHERE project_id = $1 AND id = $2 FOR UPDATE",
    )
    .bind(&c.project_id)
    .bind(c.id)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(stored) = stored else {
        return Err(Abort::Fail(campaign_not_found()));
    };
    if stored != expected {
        return Err(Abort::Fail(stale_version(stored, expected)));
    }
    if ref_code_taken(&mut tx, c).await? {
        return Err(Abort::Fail(duplicate_ref_code(c)));
    }
    let search = SearchColumns::of(c);
    sqlx::query(
        "UPDATE campaign SET ref_code = $1, name = $2, description = $3, image_url = $4, \
         start_date = $5, end_date = $6, status = $7, priority = $8, channel = $9, \
         group_name = $10, quotas = $11::jsonb, rules = $12::jsonb, version = $13, \
         created_by = $14, last_modified_by = $15, created_date = $16, \
         last_modified_date = $17, search_name = $18, search_ref_code = $19, \
         search_group_name = $20, stacking = $21::jsonb, time_zone = $22 \
         WHERE project_id = $23 AND id = $24",
    )
    .bind(&c.ref_code)
    .bind(&c.name)
    .bind(&c.description)
    .bind(&c.image_url)
    .bind(c.start_date)
    .bind(c.end_date)
    .bind(c.status.as_str())
    .bind(c.priority)
    .bind(&c.channel)
    .bind(&c.group_name)
    .bind(quotas_json(&c.quotas)?)
    .bind(rules_json(c)?)
    .bind(c.version)
    .bind(&c.created_by)
    .bind(&c.last_modified_by)
    .bind(c.created_date)
    .bind(c.last_modified_date)
    .bind(search.name)
    .bind(search.ref_code)
    .bind(search.group_name)
    .bind(stacking_json(c)?)
    .bind(&c.time_zone)
    .bind(&c.project_id)
    .bind(c.id)
    .execute(&mut *tx)
    .await
    .map_err(|e| write_conflict(e, c))?;
    bump_catalog(&mut tx, &c.project_id).await?;
    tx.commit().await?;
    Ok(())
}

async fn try_delete(store: &PostgresStore, project: &str, id: Uuid) -> Result<bool, Abort> {
    let mut tx = store.pool().begin().await?;
    let deleted = sqlx::query("DELETE FROM campaign WHERE project_id = $1 AND id = $2")
        .bind(project)
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected()
        > 0;
    if deleted {
        bump_catalog(&mut tx, project).await?;
        tx.commit().await?;
    }
    Ok(deleted)
}

/// Appends the list's `WHERE` clause (shared by the page and its count).
fn push_filters(qb: &mut QueryBuilder<'_, Postgres>, project: &str, query: &CampaignQuery) {
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
        // strpos, not LIKE: the needle is taken literally (no % or _ to escape).
        let q = q.to_lowercase();
        qb.push(" AND (strpos(search_name, ")
            .push_bind(q.clone())
            .push(") > 0 OR strpos(search_ref_code, ")
            .push_bind(q.clone())
            .push(") > 0 OR strpos(search_group_name, ")
            .push_bind(q.clone())
            .push(") > 0 OR strpos(lower(status), ")
            .push_bind(q)
            .push(") > 0)");
    }
}

store_calls!(impl CampaignStore for PostgresStore);

/// The calls of [`CampaignStore`], which `store_calls!` wraps (see
/// `crate::store::sql::calls`).
impl PostgresStore {
    async fn insert_campaign_within(&self, campaign: &Campaign, max: u64) -> Result<()> {
        retry(|| try_insert(self, campaign, max)).await
    }

    async fn update_campaign(&self, campaign: &Campaign, expected_version: i64) -> Result<()> {
        retry(|| try_update(self, campaign, expected_version)).await
    }

    async fn delete_campaign(&self, project: &str, id: Uuid) -> Result<bool> {
        retry(|| try_delete(self, project, id)).await
    }

    async fn campaign(&self, project: &str, id: Uuid) -> Result<Option<Campaign>> {
        let sql =
            format!("SELECT {CAMPAIGN_COLUMNS} FROM campaign WHERE project_id = $1 AND id = $2");
        sqlx::query(&sql)
            .bind(project)
            .bind(id)
            .fetch_optional(self.pool())
            .await
            .map_err(db_error)?
            .as_ref()
            .map(campaign_from_row)
            .transpose()
    }

    async fn campaign_by_code(&self, project: &str, ref_code: &str) -> Result<Option<Campaign>> {
        let sql = format!(
            "SELECT {CAMPAIGN_COLUMNS} FROM campaign WHERE project_id = $1 AND ref_code = $2"
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
        // One snapshot for the page and its total.
        let mut tx = self
            .pool()
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await
            .map_err(db_error)?;
        let mut count = QueryBuilder::<Postgres>::new("SELECT COUNT(*) FROM campaign");
        push_filters(&mut count, project, query);
        let total: i64 = count
            .build_query_scalar()
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;

        let (limit, offset) = limit_offset(query.page, query.size);
        let mut select =
            QueryBuilder::<Postgres>::new(format!("SELECT {CAMPAIGN_COLUMNS} FROM campaign"));
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
            "SELECT {CAMPAIGN_COLUMNS} FROM campaign WHERE project_id = $1 ORDER BY ref_code"
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
            sqlx::query_scalar("SELECT version FROM campaign_catalog WHERE project_id = $1")
                .bind(project)
                .fetch_optional(self.pool())
                .await
                .map_err(db_error)?;
        Ok(v.unwrap_or(0))
    }

    async fn count_campaigns(&self, project: &str) -> Result<u64> {
        count_in(self.pool(), project).await.map_err(db_error)
    }
}

/// The number of campaigns of `project`, read through `conn`.
async fn count_in<'c>(
    conn: impl sqlx::Executor<'c, Database = Postgres>,
    project: &str,
) -> Result<u64, sqlx::Error> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM campaign WHERE project_id = $1")
        .bind(project)
        .fetch_one(conn)
        .await?;
    Ok(u64::try_from(n).unwrap_or_default())
}
