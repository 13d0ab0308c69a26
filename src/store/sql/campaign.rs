//! Campaign definitions and the catalog version, for every SQL dialect.
//!
//! Every write bumps the project's catalog row first, in its own
//! transaction: the row's lock (PostgreSQL) or the write lock (SQLite)
//! then orders the project's catalog writes, so the campaign count of a
//! create sees every create committed before it. An update locks the
//! campaign's row before comparing versions, so exactly one of two racing
//! updates with the same expected version wins.

use uuid::Uuid;

use super::dialect::{acquire, execute, read_all, retry, row, rows, Abort, Conn, Dialect};
use super::query::{Json, Sql, SqlRow};
use super::{
    campaign_not_found, campaign_order_by, duplicate_id, duplicate_ref_code, limit_offset,
    quotas_from_json, quotas_json, rules_from_json, rules_json, stacking_from_json, stacking_json,
    stale_version, SearchColumns,
};
use crate::core::campaign::{Campaign, CampaignStatus};
use crate::store::campaign::too_many_campaigns;
use crate::store::{CampaignQuery, NamedCampaign, Page, Period};
use crate::Result;

/// The columns a [`Campaign`] is read from, in [`campaign_from_row`]'s terms.
const CAMPAIGN_COLUMNS: &str = "id, project_id, ref_code, name, description, image_url, \
     start_date, end_date, status, priority, channel, group_name, quotas, rules, version, \
     created_by, last_modified_by, created_date, last_modified_date, stacking, time_zone, \
     status_schedule";

/// The columns a campaign write sets, in the order [`bind_campaign`] binds
/// them.
const WRITTEN_COLUMNS: [&str; 23] = [
    "ref_code",
    "name",
    "description",
    "image_url",
    "start_date",
    "end_date",
    "status",
    "priority",
    "channel",
    "group_name",
    "quotas",
    "rules",
    "version",
    "created_by",
    "last_modified_by",
    "created_date",
    "last_modified_date",
    "search_name",
    "search_ref_code",
    "search_group_name",
    "stacking",
    "time_zone",
    "status_schedule",
];

fn campaign_from_row(row: &impl SqlRow) -> Result<Campaign> {
    Ok(Campaign {
        id: row.col("id")?,
        project_id: row.col("project_id")?,
        ref_code: row.col("ref_code")?,
        name: row.col("name")?,
        description: row.col("description")?,
        image_url: row.col("image_url")?,
        start_date: row.col("start_date")?,
        end_date: row.col("end_date")?,
        status: CampaignStatus::parse(&row.col::<String>("status")?),
        priority: row.col("priority")?,
        channel: row.col("channel")?,
        group_name: row.col("group_name")?,
        stacking: stacking_from_json(row.col::<Json<Option<String>>>("stacking")?.0.as_deref())?,
        time_zone: row.col("time_zone")?,
        status_schedule: super::revision::schedule_from_json(
            row.col::<Json<Option<String>>>("status_schedule")?
                .0
                .as_deref(),
        )?,
        quotas: quotas_from_json(&row.col::<Json<String>>("quotas")?.0)?,
        rules: rules_from_json(&row.col::<Json<String>>("rules")?.0)?,
        version: row.col("version")?,
        // Computed by the service for the time of each response; not stored.
        active: false,
        created_by: row.col("created_by")?,
        last_modified_by: row.col("last_modified_by")?,
        created_date: row.col("created_date")?,
        last_modified_date: row.col("last_modified_date")?,
    })
}

/// Binds the values of [`WRITTEN_COLUMNS`] in order.
fn bind_campaign(sql: Sql, c: &Campaign) -> Result<Sql> {
    let search = SearchColumns::of(c);
    Ok(sql
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
        .bind(Json(quotas_json(&c.quotas)?))
        .bind(Json(rules_json(c)?))
        .bind(c.version)
        .bind(&c.created_by)
        .bind(&c.last_modified_by)
        .bind(c.created_date)
        .bind(c.last_modified_date)
        .bind(search.name)
        .bind(search.ref_code)
        .bind(search.group_name)
        .bind(Json(stacking_json(c)?))
        .bind(&c.time_zone)
        .bind(Json(super::revision::schedule_json(c)?)))
}

/// `$from, $from+1, …`: one placeholder per written column.
fn placeholders(from: usize) -> String {
    (from..from + WRITTEN_COLUMNS.len())
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether another campaign of the project holds `campaign`'s refCode.
async fn ref_code_taken<D: Dialect>(conn: &mut Conn<D>, c: &Campaign) -> Result<bool, Abort> {
    let sql = Sql::new(
        "SELECT 1 AS taken FROM campaign WHERE project_id = $1 AND ref_code = $2 AND id <> $3",
    )
    .bind(&c.project_id)
    .bind(&c.ref_code)
    .bind(c.id);
    Ok(row::<D>(conn, &sql).await?.is_some())
}

/// Bumps the project's catalog version; called in every campaign write
/// transaction.
async fn bump_catalog<D: Dialect>(conn: &mut Conn<D>, project: &str) -> Result<(), Abort> {
    let sql = Sql::new(
        "INSERT INTO campaign_catalog (project_id, version) VALUES ($1, 1) \
         ON CONFLICT (project_id) DO UPDATE SET version = campaign_catalog.version + 1",
    )
    .bind(project);
    execute::<D>(conn, &sql).await?;
    Ok(())
}

/// The number of campaigns of `project`.
async fn count_in<D: Dialect>(conn: &mut Conn<D>, project: &str) -> Result<u64, Abort> {
    let sql = Sql::new("SELECT COUNT(*) AS n FROM campaign WHERE project_id = $1").bind(project);
    let n: i64 = match row::<D>(conn, &sql).await? {
        Some(row) => row.col("n")?,
        None => 0,
    };
    Ok(u64::try_from(n).unwrap_or_default())
}

/// Maps the unique violations a campaign write can meet. The refCode check
/// before the write runs in the same transaction, but (PostgreSQL) a
/// concurrent insert of the same refCode can still commit between the
/// check and the write; the unique constraint then has the last word.
fn write_conflict<D: Dialect>(e: Abort, c: &Campaign) -> Abort {
    match e {
        Abort::Db(db) => match D::campaign_key_violated(&db) {
            Some(true) => Abort::Fail(duplicate_id()),
            Some(false) => Abort::Fail(duplicate_ref_code(c)),
            None => Abort::Db(db),
        },
        other @ Abort::Fail(_) => other,
    }
}

async fn try_insert<D: Dialect>(db: &D, c: &Campaign, max: u64) -> Result<(), Abort> {
    let mut tx = db.begin_write().await?;
    bump_catalog::<D>(tx.conn(), &c.project_id).await?;
    if max != u64::MAX && count_in::<D>(tx.conn(), &c.project_id).await? >= max {
        return Err(Abort::Fail(too_many_campaigns(max)));
    }
    if ref_code_taken::<D>(tx.conn(), c).await? {
        return Err(Abort::Fail(duplicate_ref_code(c)));
    }
    let sql = Sql::new(format!(
        "INSERT INTO campaign (id, project_id, {}) VALUES ($1, $2, {})",
        WRITTEN_COLUMNS.join(", "),
        placeholders(3)
    ))
    .bind(c.id)
    .bind(&c.project_id);
    let sql = bind_campaign(sql, c)?;
    execute::<D>(tx.conn(), &sql)
        .await
        .map_err(|e| write_conflict::<D>(e, c))?;
    super::revision::record::<D>(tx.conn(), c, true).await?;
    tx.commit().await
}

async fn try_update<D: Dialect>(db: &D, c: &Campaign, expected: i64) -> Result<(), Abort> {
    let mut tx = db.begin_write().await?;
    let lock = Sql::new(format!(
        "SELECT version FROM campaign WHERE project_id = $1 AND id = $2{}",
        D::FOR_UPDATE
    ))
    .bind(&c.project_id)
    .bind(c.id);
    let Some(stored) = row::<D>(tx.conn(), &lock).await? else {
        return Err(Abort::Fail(campaign_not_found()));
    };
    let stored: i64 = stored.col("version")?;
    if stored != expected {
        return Err(Abort::Fail(stale_version(stored, expected)));
    }
    if ref_code_taken::<D>(tx.conn(), c).await? {
        return Err(Abort::Fail(duplicate_ref_code(c)));
    }
    let set = WRITTEN_COLUMNS
        .iter()
        .enumerate()
        .map(|(i, column)| format!("{column} = ${}", i + 3))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = Sql::new(format!(
        "UPDATE campaign SET {set} WHERE project_id = $1 AND id = $2"
    ))
    .bind(&c.project_id)
    .bind(c.id);
    let sql = bind_campaign(sql, c)?;
    execute::<D>(tx.conn(), &sql)
        .await
        .map_err(|e| write_conflict::<D>(e, c))?;
    super::revision::record::<D>(tx.conn(), c, false).await?;
    bump_catalog::<D>(tx.conn(), &c.project_id).await?;
    tx.commit().await
}

async fn try_delete<D: Dialect>(db: &D, project: &str, id: Uuid) -> Result<bool, Abort> {
    let mut tx = db.begin_write().await?;
    let sql = Sql::new("DELETE FROM campaign WHERE project_id = $1 AND id = $2")
        .bind(project)
        .bind(id);
    let deleted = execute::<D>(tx.conn(), &sql).await? > 0;
    if deleted {
        bump_catalog::<D>(tx.conn(), project).await?;
        tx.commit().await?;
    }
    Ok(deleted)
}

/// Appends the list's `WHERE` clause (shared by the page and its count).
fn push_filters<D: Dialect>(sql: &mut Sql, project: &str, query: &CampaignQuery) {
    sql.push(" WHERE project_id = ").push_bind(project);
    if let Some(status) = &query.status {
        sql.push(" AND status = ").push_bind(status.as_str());
    }
    if let Some(channel) = &query.channel {
        sql.push(" AND channel = ").push_bind(channel);
    }
    if let Some(group) = &query.group {
        sql.push(" AND group_name = ").push_bind(group);
    }
    if let Some((period, at)) = query.period {
        match period {
            Period::Current => sql
                .push(" AND start_date <= ")
                .push_bind(at)
                .push(" AND end_date > ")
                .push_bind(at),
            Period::Scheduled => sql.push(" AND start_date > ").push_bind(at),
            Period::Ended => sql.push(" AND end_date <= ").push_bind(at),
        };
    }
    if let Some(q) = &query.q {
        // A position, not LIKE: the needle is taken literally (no % or _
        // to escape). The status is ASCII, so the database's lower() folds
        // it right.
        let q = q.to_lowercase();
        let position = D::POSITION_FN;
        sql.push(" AND (");
        for (i, column) in [
            "search_name",
            "search_ref_code",
            "search_group_name",
            "lower(status)",
        ]
        .into_iter()
        .enumerate()
        {
            if i > 0 {
                sql.push(" OR ");
            }
            sql.push(&format!("{position}({column}, "))
                .push_bind(q.clone())
                .push(") > 0");
        }
        sql.push(")");
    }
}

/// One campaign found by `column = value`.
async fn campaign_by<D: Dialect>(
    db: &D,
    project: &str,
    column: &str,
    value: super::query::Arg,
) -> Result<Option<Campaign>> {
    let sql = Sql::new(format!(
        "SELECT {CAMPAIGN_COLUMNS} FROM campaign WHERE project_id = $1 AND {column} = $2"
    ))
    .bind(project)
    .bind(value);
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        Ok(row::<D>(&mut conn, &sql)
            .await?
            .as_ref()
            .map(campaign_from_row)
            .transpose()?)
    })
    .await
}

async fn try_list<D: Dialect>(
    db: &D,
    project: &str,
    query: &CampaignQuery,
) -> Result<Page<Campaign>, Abort> {
    // One snapshot for the page and its total.
    let mut tx = db.begin_read().await?;
    let mut count = Sql::new("SELECT COUNT(*) AS n FROM campaign");
    push_filters::<D>(&mut count, project, query);
    let total: i64 = match row::<D>(tx.conn(), &count).await? {
        Some(row) => row.col("n")?,
        None => 0,
    };
    let (limit, offset) = limit_offset(query.page, query.size);
    let mut select = Sql::new(format!("SELECT {CAMPAIGN_COLUMNS} FROM campaign"));
    push_filters::<D>(&mut select, project, query);
    select
        .push(" ")
        .push(&campaign_order_by(&query.sort))
        .push(" LIMIT ")
        .push_bind(limit)
        .push(" OFFSET ")
        .push_bind(offset);
    let rows = rows::<D>(tx.conn(), &select).await?;
    tx.commit().await?;
    Ok(Page {
        items: rows.iter().map(campaign_from_row).collect::<Result<_>>()?,
        page: query.page,
        size: query.size,
        total: u64::try_from(total).unwrap_or_default(),
    })
}

/// [`CampaignStore::insert_campaign_within`](crate::store::CampaignStore::insert_campaign_within).
pub(crate) async fn insert_campaign_within<D: Dialect>(
    db: &D,
    campaign: &Campaign,
    max: u64,
) -> Result<()> {
    retry::<D, _, _, _>(|| try_insert(db, campaign, max)).await
}

/// [`CampaignStore::update_campaign`](crate::store::CampaignStore::update_campaign).
pub(crate) async fn update_campaign<D: Dialect>(
    db: &D,
    campaign: &Campaign,
    expected_version: i64,
) -> Result<()> {
    retry::<D, _, _, _>(|| try_update(db, campaign, expected_version)).await
}

/// [`CampaignStore::delete_campaign`](crate::store::CampaignStore::delete_campaign).
pub(crate) async fn delete_campaign<D: Dialect>(db: &D, project: &str, id: Uuid) -> Result<bool> {
    retry::<D, _, _, _>(|| try_delete(db, project, id)).await
}

/// [`CampaignStore::campaign`](crate::store::CampaignStore::campaign).
pub(crate) async fn campaign<D: Dialect>(
    db: &D,
    project: &str,
    id: Uuid,
) -> Result<Option<Campaign>> {
    campaign_by(db, project, "id", id.into()).await
}

/// [`CampaignStore::campaign_by_code`](crate::store::CampaignStore::campaign_by_code).
pub(crate) async fn campaign_by_code<D: Dialect>(
    db: &D,
    project: &str,
    ref_code: &str,
) -> Result<Option<Campaign>> {
    campaign_by(db, project, "ref_code", ref_code.into()).await
}

/// Column `code_pool` of a row of `campaign`: 1 when the campaign has a
/// code pool, else 0 (one probe of `promo_code_campaign_idx`).
pub(crate) const CODE_POOL_COLUMN: &str = "CASE WHEN EXISTS (SELECT 1 FROM promo_code p \
     WHERE p.project_id = campaign.project_id AND p.campaign_id = campaign.id) \
     THEN 1 ELSE 0 END AS code_pool";

/// [`CampaignStore::campaigns_by_code`](crate::store::CampaignStore::campaigns_by_code):
/// one statement (a redeem names at most [`MAX_ACTION_REFS`] + 1 codes),
/// whether each campaign has a code pool read in it (one probe of
/// `promo_code_campaign_idx`).
///
/// [`MAX_ACTION_REFS`]: crate::core::limits::MAX_ACTION_REFS
pub(crate) async fn campaigns_by_code<D: Dialect>(
    db: &D,
    project: &str,
    ref_codes: &[&str],
) -> Result<Vec<NamedCampaign>> {
    if ref_codes.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(format!(
        "SELECT {CAMPAIGN_COLUMNS}, {CODE_POOL_COLUMN} \
         FROM campaign WHERE project_id = $1 AND ref_code IN ("
    ))
    .bind(project);
    sql.push_list(ref_codes.iter().copied()).push(")");
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        Ok(rows::<D>(&mut conn, &sql)
            .await?
            .iter()
            .map(|row| {
                Ok(NamedCampaign {
                    campaign: campaign_from_row(row)?,
                    code_pool: row.col::<i32>("code_pool")? != 0,
                })
            })
            .collect::<Result<_>>()?)
    })
    .await
}

/// [`CampaignStore::list_campaigns`](crate::store::CampaignStore::list_campaigns).
pub(crate) async fn list_campaigns<D: Dialect>(
    db: &D,
    project: &str,
    query: &CampaignQuery,
) -> Result<Page<Campaign>> {
    retry::<D, _, _, _>(|| try_list(db, project, query)).await
}

/// [`CampaignStore::all_campaigns`](crate::store::CampaignStore::all_campaigns).
pub(crate) async fn all_campaigns<D: Dialect>(db: &D, project: &str) -> Result<Vec<Campaign>> {
    let sql = Sql::new(format!(
        "SELECT {CAMPAIGN_COLUMNS} FROM campaign WHERE project_id = $1 ORDER BY ref_code"
    ))
    .bind(project);
    read_all(db, &sql, campaign_from_row).await
}

/// [`CampaignStore::catalog_version`](crate::store::CampaignStore::catalog_version).
pub(crate) async fn catalog_version<D: Dialect>(db: &D, project: &str) -> Result<i64> {
    let sql = Sql::new("SELECT version FROM campaign_catalog WHERE project_id = $1").bind(project);
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        Ok(match row::<D>(&mut conn, &sql).await? {
            Some(row) => row.col("version")?,
            None => 0,
        })
    })
    .await
}

/// [`CampaignStore::count_campaigns`](crate::store::CampaignStore::count_campaigns).
pub(crate) async fn count_campaigns<D: Dialect>(db: &D, project: &str) -> Result<u64> {
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        count_in::<D>(&mut conn, project).await
    })
    .await
}
