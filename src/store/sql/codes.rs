//! Code pools, for every SQL dialect.
//!
//! Codes are stored in one write transaction per call, in multi-row
//! `INSERT`s of [`CODE_INSERT_BATCH`] rows (one statement text, so the
//! driver prepares it once). Generated codes go in with `ON CONFLICT DO
//! NOTHING`: a draw that meets a taken code inserts nothing, and the
//! shortfall is drawn again. Imported codes are first looked up batch by
//! batch, so that the error names the codes already taken.
//!
//! A redemption's use of a code ([`take_code`]) is one conditional
//! `UPDATE … SET used = used + 1 WHERE … AND used < usage_limit`: the
//! database's row lock makes concurrent uses wait for each other, and the
//! condition is checked against the committed count, so `used` never
//! passes the limit whatever runs at the same time, in one process or many.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::dialect::{acquire, execute, read_all, retry, row, rows, Abort, Conn, Dialect};
use super::limit_offset;
use super::query::{Sql, SqlRow};
use crate::core::campaign::codes::{CodeGenerator, PromoCode};
use crate::core::error::ErrorCode;
use crate::store::{CodeBatch, CodeRefusal, CodeSource, Page, Progress, CODE_INSERT_BATCH};
use crate::{Error, FieldError, Result};

const CODE_COLUMNS: &str = "code, campaign_id, usage_limit, used, active, created_date";

fn code_from_row(row: &impl SqlRow) -> Result<PromoCode> {
    Ok(PromoCode {
        code: row.col("code")?,
        campaign_id: row.col("campaign_id")?,
        usage_limit: row.col("usage_limit")?,
        used: row.col("used")?,
        active: row.col::<i32>("active")? != 0,
        created_date: row.col("created_date")?,
    })
}

/// One row to insert: (code, normalized, usage limit).
type Row<'a> = (&'a str, String, i64);

/// Inserts `batch_rows`; with `skip_taken`, codes already taken are left
/// out. The number inserted.
async fn insert_rows<D: Dialect>(
    conn: &mut Conn<D>,
    batch: &CodeBatch,
    batch_rows: &[Row<'_>],
    skip_taken: bool,
) -> Result<u64, Abort> {
    if batch_rows.is_empty() {
        return Ok(0);
    }
    let mut sql = Sql::new(
        "INSERT INTO promo_code (project_id, normalized, code, campaign_id, usage_limit, used, \
         active, created_date) VALUES ",
    );
    for (i, (code, normalized, limit)) in batch_rows.iter().enumerate() {
        sql.push(if i == 0 { "(" } else { ", (" })
            .push_bind(&batch.project_id)
            .push(", ")
            .push_bind(normalized.as_str())
            .push(", ")
            .push_bind(*code)
            .push(", ")
            .push_bind(batch.campaign_id)
            .push(", ")
            .push_bind(*limit)
            .push(", 0, 1, ")
            .push_bind(batch.created_date)
            .push(")");
    }
    if skip_taken {
        sql.push(" ON CONFLICT (project_id, normalized) DO NOTHING");
    }
    execute::<D>(conn, &sql).await
}

fn space_exhausted(stored: u64, count: u64) -> Error {
    Error::new(
        ErrorCode::CodeSpaceExhausted,
        format!(
            "only {stored} of {count} codes could be drawn without meeting taken codes: \
             make the codes longer or change the prefix or suffix"
        ),
    )
}

async fn try_insert<D: Dialect>(db: &D, batch: &CodeBatch) -> Result<u64, Abort> {
    let mut tx = db.begin_write().await?;
    let progress = batch.progress.as_ref();
    let stored = match &batch.source {
        CodeSource::Generated(plan) => {
            let mut stored = 0u64;
            let mut draw = 0u64;
            let max = CodeGenerator::max_draws(plan.count);
            while stored < plan.count {
                let want = usize::try_from(plan.count - stored)
                    .unwrap_or(usize::MAX)
                    .min(CODE_INSERT_BATCH);
                if draw.saturating_add(want as u64) > max {
                    return Err(Abort::Fail(space_exhausted(stored, plan.count)));
                }
                let codes: Vec<String> = (draw..draw + want as u64)
                    .map(|i| plan.generator.code(i))
                    .collect();
                draw += want as u64;
                let batch_rows: Vec<Row<'_>> = codes
                    .iter()
                    .map(|c| {
                        (
                            c.as_str(),
                            crate::core::campaign::codes::normalize(c),
                            plan.usage_limit,
                        )
                    })
                    .collect();
                stored += insert_rows::<D>(tx.conn(), batch, &batch_rows, true).await?;
                Progress::tell(progress, stored);
            }
            stored
        }
        CodeSource::Imported(codes) => {
            let mut taken = Vec::new();
            for chunk in codes.chunks(CODE_INSERT_BATCH) {
                let mut sql = Sql::new(
                    "SELECT code FROM promo_code WHERE project_id = $1 AND normalized IN (",
                )
                .bind(&batch.project_id);
                sql.push_list(chunk.iter().map(|c| c.normalized.as_str()))
                    .push(") ORDER BY normalized");
                for r in rows::<D>(tx.conn(), &sql).await? {
                    taken.push(r.col::<String>("code")?);
                }
                if taken.len() >= 100 {
                    break;
                }
            }
            if !taken.is_empty() {
                return Err(Abort::Fail(duplicates(&taken)));
            }
            let mut stored = 0u64;
            for chunk in codes.chunks(CODE_INSERT_BATCH) {
                let batch_rows: Vec<Row<'_>> = chunk
                    .iter()
                    .map(|c| (c.code.as_str(), c.normalized.clone(), c.usage_limit))
                    .collect();
                let n = insert_rows::<D>(tx.conn(), batch, &batch_rows, true).await?;
                if n != chunk.len() as u64 {
                    // Another import took some of them since the check.
                    return Err(Abort::Fail(Error::new(
                        ErrorCode::DuplicateCode,
                        "codes of the file were stored by another import meanwhile",
                    )));
                }
                stored += n;
                Progress::tell(progress, stored);
            }
            stored
        }
    };
    tx.commit().await?;
    Ok(stored)
}

/// The error of an import meeting codes already in the project.
pub(crate) fn duplicates(taken: &[String]) -> Error {
    Error::new(
        ErrorCode::DuplicateCode,
        format!(
            "{} code(s) of the file are already in the project; nothing was imported",
            taken.len()
        ),
    )
    .with_fields(
        taken
            .iter()
            .take(100)
            .map(|c| {
                FieldError::new(
                    "code",
                    ErrorCode::DuplicateCode,
                    format!("{c:?} is already in the project"),
                )
            })
            .collect(),
    )
}

/// [`CodeStore::insert_codes`](crate::store::CodeStore::insert_codes).
pub(crate) async fn insert_codes<D: Dialect>(db: &D, batch: &CodeBatch) -> Result<u64> {
    retry::<D, _, _, _>(|| try_insert(db, batch)).await
}

/// [`CodeStore::code`](crate::store::CodeStore::code).
pub(crate) async fn code<D: Dialect>(
    db: &D,
    project: &str,
    normalized: &str,
) -> Result<Option<PromoCode>> {
    let sql = Sql::new(format!(
        "SELECT {CODE_COLUMNS} FROM promo_code WHERE project_id = $1 AND normalized = $2"
    ))
    .bind(project)
    .bind(normalized);
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        match row::<D>(&mut conn, &sql).await? {
            Some(r) => Ok(Some(code_from_row(&r)?)),
            None => Ok(None),
        }
    })
    .await
}

/// [`CodeStore::list_codes`](crate::store::CodeStore::list_codes).
pub(crate) async fn list_codes<D: Dialect>(
    db: &D,
    project: &str,
    campaign_id: Uuid,
    page: u32,
    size: u32,
) -> Result<Page<PromoCode>> {
    let (limit, offset) = limit_offset(page, size);
    let count =
        Sql::new("SELECT COUNT(*) AS n FROM promo_code WHERE project_id = $1 AND campaign_id = $2")
            .bind(project)
            .bind(campaign_id);
    let select = Sql::new(format!(
        "SELECT {CODE_COLUMNS} FROM promo_code WHERE project_id = $1 AND campaign_id = $2 \
         ORDER BY normalized LIMIT $3 OFFSET $4"
    ))
    .bind(project)
    .bind(campaign_id)
    .bind(limit)
    .bind(offset);
    retry::<D, _, _, _>(|| async {
        let mut tx = db.begin_read().await?;
        let total: i64 = match row::<D>(tx.conn(), &count).await? {
            Some(r) => r.col("n")?,
            None => 0,
        };
        let items = rows::<D>(tx.conn(), &select)
            .await?
            .iter()
            .map(code_from_row)
            .collect::<Result<Vec<_>>>()?;
        tx.commit().await?;
        Ok(Page {
            items,
            page,
            size,
            total: u64::try_from(total).unwrap_or_default(),
        })
    })
    .await
}

/// [`CodeStore::codes_after`](crate::store::CodeStore::codes_after).
pub(crate) async fn codes_after<D: Dialect>(
    db: &D,
    project: &str,
    campaign_id: Uuid,
    after: Option<&str>,
    limit: u32,
) -> Result<Vec<PromoCode>> {
    let mut sql = Sql::new(format!(
        "SELECT {CODE_COLUMNS} FROM promo_code WHERE project_id = $1 AND campaign_id = $2"
    ))
    .bind(project)
    .bind(campaign_id);
    if let Some(after) = after {
        sql.push(" AND normalized > ").push_bind(after);
    }
    sql.push(" ORDER BY normalized LIMIT ")
        .push_bind(i64::from(limit));
    read_all(db, &sql, code_from_row).await
}

/// [`CodeStore::set_code_active`](crate::store::CodeStore::set_code_active).
pub(crate) async fn set_code_active<D: Dialect>(
    db: &D,
    project: &str,
    campaign_id: Uuid,
    normalized: &str,
    active: bool,
) -> Result<Option<PromoCode>> {
    retry::<D, _, _, _>(|| async {
        let mut tx = db.begin_write().await?;
        let update = Sql::new(
            "UPDATE promo_code SET active = $4 \
             WHERE project_id = $1 AND campaign_id = $2 AND normalized = $3",
        )
        .bind(project)
        .bind(campaign_id)
        .bind(normalized)
        .bind(i32::from(active));
        execute::<D>(tx.conn(), &update).await?;
        let select = Sql::new(format!(
            "SELECT {CODE_COLUMNS} FROM promo_code \
             WHERE project_id = $1 AND campaign_id = $2 AND normalized = $3"
        ))
        .bind(project)
        .bind(campaign_id)
        .bind(normalized);
        let found = match row::<D>(tx.conn(), &select).await? {
            Some(r) => Some(code_from_row(&r)?),
            None => None,
        };
        tx.commit().await?;
        Ok(found)
    })
    .await
}

/// Takes one use of `code` inside a redemption's or hold's transaction at
/// `at`, or says why not. When the code has no use left, the uses of its
/// holds expired at `at` are given back first ([`reclaim`]).
pub(crate) async fn take_code<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    campaign_id: Uuid,
    code: &str,
    at: DateTime<Utc>,
) -> Result<Option<CodeRefusal>, Abort> {
    let update = Sql::new(
        "UPDATE promo_code SET used = used + 1 \
         WHERE project_id = $1 AND normalized = $2 AND campaign_id = $3 \
         AND active = 1 AND used < usage_limit",
    )
    .bind(project)
    .bind(code)
    .bind(campaign_id);
    if execute::<D>(conn, &update).await? == 1 {
        return Ok(None);
    }
    let select = Sql::new(format!(
        "SELECT {CODE_COLUMNS} FROM promo_code WHERE project_id = $1 AND normalized = $2"
    ))
    .bind(project)
    .bind(code);
    let owned = code.to_owned();
    let Some(found) = row::<D>(conn, &select).await? else {
        return Ok(Some(CodeRefusal::NotFound(owned)));
    };
    let found = code_from_row(&found)?;
    if found.campaign_id != campaign_id {
        return Ok(Some(CodeRefusal::OtherCampaign(owned)));
    }
    if !found.active {
        return Ok(Some(CodeRefusal::Inactive(owned)));
    }
    if reclaim::<D>(conn, project, code, at).await? > 0 && execute::<D>(conn, &update).await? == 1 {
        return Ok(None);
    }
    Ok(Some(CodeRefusal::Exhausted {
        code: owned,
        limit: found.usage_limit,
    }))
}

/// Gives back the uses of `code` that holds expired at `at` still
/// reserve; how many. The holds' rows are locked first (a confirmation
/// locks its hold's row before it looks), then the code's.
pub(crate) async fn reclaim<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    code: &str,
    at: DateTime<Utc>,
) -> Result<u64, Abort> {
    let expired = Sql::new(
        "UPDATE quota_hold SET code_held = 0 \
         WHERE project_id = $1 AND code = $2 AND code_held = 1 AND expires_at <= $3",
    )
    .bind(project)
    .bind(code)
    .bind(at);
    let back = execute::<D>(conn, &expired).await?;
    if back > 0 {
        let give = Sql::new(
            "UPDATE promo_code SET used = used - $3 WHERE project_id = $1 AND normalized = $2",
        )
        .bind(project)
        .bind(code)
        .bind(i64::try_from(back).map_err(Error::internal)?);
        execute::<D>(conn, &give).await?;
    }
    Ok(back)
}

/// Gives back the uses every hold of the project expired at `at` still
/// reserves (the sweep); how many.
pub(crate) async fn reclaim_all<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    at: DateTime<Utc>,
) -> Result<u64, Abort> {
    let codes = Sql::new(
        "SELECT DISTINCT code FROM quota_hold \
         WHERE project_id = $1 AND code_held = 1 AND expires_at <= $2 ORDER BY code",
    )
    .bind(project)
    .bind(at);
    let mut back = 0;
    for r in rows::<D>(conn, &codes).await? {
        let code: String = r.col("code")?;
        back += reclaim::<D>(conn, project, &code, at).await?;
    }
    Ok(back)
}

/// Gives a use of a code back (a cancelled redemption's, a released
/// hold's).
pub(crate) async fn release_code<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    code: &str,
) -> Result<(), Abort> {
    let sql = Sql::new(
        "UPDATE promo_code SET used = used - 1 \
         WHERE project_id = $1 AND normalized = $2 AND used > 0",
    )
    .bind(project)
    .bind(code);
    execute::<D>(conn, &sql).await?;
    Ok(())
}
