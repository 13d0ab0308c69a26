//! Campaign revisions and the status schedule column, for every SQL
//! dialect. A revision is written by the campaign write's own transaction
//! ([`record`]), so a save and its revision commit together or not at all.

use uuid::Uuid;

use super::dialect::{acquire, execute, retry, row, rows, Abort, Conn, Dialect};
use super::query::{Json, Sql, SqlRow};
use super::{corrupt, limit_offset};
use crate::core::campaign::{Campaign, CampaignRevision, StatusChange};
use crate::store::Page;
use crate::{Error, Result};

/// The `status_schedule` column of a campaign: `NULL` when none.
pub(crate) fn schedule_json(campaign: &Campaign) -> Result<Option<String>> {
    if campaign.status_schedule.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(&campaign.status_schedule)
        .map(Some)
        .map_err(Error::internal)
}

/// Reads the `status_schedule` column back.
pub(crate) fn schedule_from_json(json: Option<&str>) -> Result<Vec<StatusChange>> {
    json.map_or_else(
        || Ok(Vec::new()),
        |j| serde_json::from_str(j).map_err(|e| corrupt("campaign status schedule", e)),
    )
}

/// Writes the revision that saving `c` makes, inside the save's
/// transaction. On a create, revisions left under the same id by a deleted
/// campaign are replaced: a new campaign starts a new history.
pub(crate) async fn record<D: Dialect>(
    conn: &mut Conn<D>,
    c: &Campaign,
    create: bool,
) -> Result<(), Abort> {
    if create {
        let clear =
            Sql::new("DELETE FROM campaign_revision WHERE project_id = $1 AND campaign_id = $2")
                .bind(&c.project_id)
                .bind(c.id);
        execute::<D>(conn, &clear).await?;
    }
    let revision = CampaignRevision::of(c);
    let content = serde_json::to_string(&revision.campaign).map_err(Error::internal)?;
    let sql = Sql::new(
        "INSERT INTO campaign_revision \
         (project_id, campaign_id, revision, created_by, created_date, content) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&c.project_id)
    .bind(c.id)
    .bind(revision.revision)
    .bind(&revision.created_by)
    .bind(revision.created_date)
    .bind(Json(content));
    execute::<D>(conn, &sql).await?;
    Ok(())
}

const REVISION_COLUMNS: &str = "campaign_id, revision, created_by, created_date, content";

fn revision_from_row(row: &impl SqlRow) -> Result<CampaignRevision> {
    let content = row.col::<Json<String>>("content")?.0;
    Ok(CampaignRevision {
        campaign_id: row.col("campaign_id")?,
        revision: row.col("revision")?,
        created_by: row.col("created_by")?,
        created_date: row.col("created_date")?,
        campaign: serde_json::from_str(&content).map_err(|e| corrupt("campaign revision", e))?,
    })
}

async fn try_list<D: Dialect>(
    db: &D,
    project: &str,
    campaign_id: Uuid,
    page: u32,
    size: u32,
) -> Result<Page<CampaignRevision>, Abort> {
    // One snapshot for the page and its total.
    let mut tx = db.begin_read().await?;
    let count = Sql::new(
        "SELECT COUNT(*) AS n FROM campaign_revision WHERE project_id = $1 AND campaign_id = $2",
    )
    .bind(project)
    .bind(campaign_id);
    let total: i64 = match row::<D>(tx.conn(), &count).await? {
        Some(row) => row.col("n")?,
        None => 0,
    };
    let (limit, offset) = limit_offset(page, size);
    let select = Sql::new(format!(
        "SELECT {REVISION_COLUMNS} FROM campaign_revision \
         WHERE project_id = $1 AND campaign_id = $2 ORDER BY revision DESC LIMIT $3 OFFSET $4"
    ))
    .bind(project)
    .bind(campaign_id)
    .bind(limit)
    .bind(offset);
    let rows = rows::<D>(tx.conn(), &select).await?;
    tx.commit().await?;
    Ok(Page {
        items: rows.iter().map(revision_from_row).collect::<Result<_>>()?,
        page,
        size,
        total: u64::try_from(total).unwrap_or_default(),
    })
}

/// [`CampaignStore::campaign_revisions`](crate::store::CampaignStore::campaign_revisions).
pub(crate) async fn campaign_revisions<D: Dialect>(
    db: &D,
    project: &str,
    campaign_id: Uuid,
    page: u32,
    size: u32,
) -> Result<Page<CampaignRevision>> {
    retry::<D, _, _, _>(|| try_list(db, project, campaign_id, page, size)).await
}

/// [`CampaignStore::campaign_revision`](crate::store::CampaignStore::campaign_revision).
pub(crate) async fn campaign_revision<D: Dialect>(
    db: &D,
    project: &str,
    campaign_id: Uuid,
    revision: i64,
) -> Result<Option<CampaignRevision>> {
    let sql = Sql::new(format!(
        "SELECT {REVISION_COLUMNS} FROM campaign_revision \
         WHERE project_id = $1 AND campaign_id = $2 AND revision = $3"
    ))
    .bind(project)
    .bind(campaign_id)
    .bind(revision);
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        Ok(row::<D>(&mut conn, &sql)
            .await?
            .as_ref()
            .map(revision_from_row)
            .transpose()?)
    })
    .await
}
