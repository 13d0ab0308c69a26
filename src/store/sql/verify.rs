//! The check of redeems planned from a compiled snapshot
//! ([`RedemptionPlan::verify_campaign`](crate::store::RedemptionPlan::verify_campaign)):
//! inside the redeem's transaction, before anything is written, each such
//! member's campaign must still be stored in the version it was planned
//! from, and a member without a code must name a campaign without a code
//! pool.
//!
//! One statement per project of the group, the first of the transaction.
//! On PostgreSQL it takes a share lock on the campaign rows (`FOR
//! SHARE`): an edit or a delete of the campaign waits for the group's
//! commit, so no redemption is recorded against a version that another
//! transaction has already replaced. The group holds no other lock yet, so
//! the wait cannot be part of a deadlock. On SQLite the write transaction
//! already excludes every other writer.

use std::collections::{BTreeSet, HashMap};

use uuid::Uuid;

use super::campaign::CODE_POOL_COLUMN;
use super::dialect::{rows, Abort, Conn, Dialect};
use super::query::{Sql, SqlRow};
use crate::core::campaign::Redemption;
use crate::store::{CodeRefusal, RedeemOutcome};

/// Per member of `group`, the answer of a member whose check failed
/// (`None`: checked and current, or not to be checked). `verify[i]` says
/// whether member `i` is checked.
pub(crate) async fn campaigns<D: Dialect>(
    conn: &mut Conn<D>,
    group: &[Redemption],
    verify: &[bool],
) -> Result<Vec<Option<RedeemOutcome>>, Abort> {
    let mut answers: Vec<Option<RedeemOutcome>> = group.iter().map(|_| None).collect();
    let checked = || {
        group
            .iter()
            .zip(verify)
            .filter(|(_, v)| **v)
            .map(|(r, _)| r)
    };
    let projects: BTreeSet<&str> = checked().map(|r| r.project_id.as_str()).collect();
    for project in projects {
        let ids: BTreeSet<Uuid> = checked()
            .filter(|r| r.project_id == project)
            .map(|r| r.campaign_id)
            .collect();
        let stored = stored::<D>(conn, project, &ids).await?;
        for (i, r) in group.iter().enumerate() {
            if !verify[i] || r.project_id != project {
                continue;
            }
            answers[i] = match stored.get(&r.campaign_id) {
                Some(&(version, _)) if version != r.campaign_version => {
                    Some(RedeemOutcome::CampaignChanged)
                }
                None => Some(RedeemOutcome::CampaignChanged),
                Some(&(_, true)) if r.code.is_none() => {
                    Some(RedeemOutcome::CodeRefused(CodeRefusal::Required))
                }
                Some(_) => None,
            };
        }
    }
    Ok(answers)
}

/// The stored version of each campaign of `ids` in `project`, and whether
/// it has a code pool; the rows share-locked where the database locks rows.
async fn stored<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    ids: &BTreeSet<Uuid>,
) -> Result<HashMap<Uuid, (i64, bool)>, Abort> {
    let mut sql = Sql::new(format!(
        "SELECT id, version, {CODE_POOL_COLUMN} FROM campaign WHERE project_id = $1 AND id IN ("
    ))
    .bind(project);
    sql.push_list(ids.iter().copied())
        .push(")")
        .push(D::FOR_SHARE);
    rows::<D>(conn, &sql)
        .await?
        .iter()
        .map(|row| {
            Ok((
                row.col::<Uuid>("id")?,
                (row.col("version")?, row.col::<i32>("code_pool")? != 0),
            ))
        })
        .collect()
}
