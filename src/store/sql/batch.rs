//! A group of redeems written as one batch: a handful of statements for
//! the whole group instead of a handful for each member.
//!
//! [`super::group`] gathers concurrent redeems into one transaction. Run
//! member by member, each inside its own savepoint, a redeem costs about
//! seven statements (on SQLite each is a trip through the driver's worker
//! thread), and the group's transaction holds the campaign-wide quota
//! rows for all of them. A batch reads what the group needs once, decides
//! every member in memory, and writes the recorded ones together:
//!
//! 1. The idempotency keys already taken, in one read: those members are
//!    replays of the stored record.
//! 2. The usage of every quota key the others charge, in one read that
//!    locks the rows (`FOR UPDATE` on PostgreSQL; SQLite's write
//!    transaction already excludes every other writer).
//! 3. In memory, member by member in the group's order: each charge is
//!    checked against the key's running total (its stored usage plus what
//!    the members before it were granted), exactly as the savepoint path
//!    would find it, and a member refused by one charge takes none.
//! 4. The recorded members' redemptions, charges, new usage totals and
//!    outbox events, one statement each.
//!
//! Each member stays all-or-nothing: a refused member writes nothing, and
//! nothing is answered before the commit. Whatever the batch cannot decide
//! exactly in memory makes it give way to the savepoint path (the caller
//! rolls the batch back and runs the group member by member): a code (its
//! pool has rows of its own), a rolling window or a hold's calendar charge
//! about to expire (the savepoint path sweeps it at each member's instant),
//! an idempotency key twice in the group, or a write that did not find the
//! rows the reads promised (on PostgreSQL another transaction inserted the
//! same idempotency key or quota key in between). A database error that is
//! not worth a retry gives way too, so that it fails only its own member.

use std::collections::{BTreeSet, HashMap, HashSet};

use rust_decimal::Decimal;

use super::dialect::{execute, rows, Abort, Conn, Dialect};
use super::outbox;
use super::query::{Arg, Sql, SqlRow};
use super::redemption::{fetch_redemption, insert_charges_of, insert_redemptions, By};
use crate::core::campaign::Redemption;
use crate::core::outbox::OutboxEvent;
use crate::store::RedeemOutcome;
use crate::{Error, Result};

/// Whether `group` may be written as a batch: no member redeems a code or
/// charges a rolling window, and no idempotency key appears twice.
pub(crate) fn batchable(group: &[Redemption]) -> bool {
    let mut keys = HashSet::new();
    group.iter().all(|r| {
        r.code.is_none()
            && r.quotas.iter().all(|c| c.window.is_none())
            && r.idempotency_key
                .as_deref()
                .is_none_or(|k| keys.insert((r.project_id.as_str(), k)))
    })
}

/// Each member's answer, in order; `None` when the batch gives way (the
/// caller rolls back what it wrote). `group` is [`batchable`].
pub(crate) async fn write<D: Dialect>(
    conn: &mut Conn<D>,
    group: &[Redemption],
) -> Result<Option<Vec<Result<RedeemOutcome>>>, Abort> {
    let mut answers: Vec<Option<Result<RedeemOutcome>>> = group.iter().map(|_| None).collect();
    let projects: BTreeSet<&str> = group.iter().map(|r| r.project_id.as_str()).collect();
    for project in projects {
        let members: Vec<usize> = (0..group.len())
            .filter(|&i| group[i].project_id == project)
            .collect();
        if !write_project::<D>(conn, project, group, &members, &mut answers).await? {
            return Ok(None);
        }
    }
    let answers = answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Err(Error::internal("a redeem of the batch went unanswered"))))
        .collect();
    Ok(Some(answers))
}

/// The members of one project (indices into `group`): answers them, or
/// `false` to give way.
async fn write_project<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    group: &[Redemption],
    members: &[usize],
    answers: &mut [Option<Result<RedeemOutcome>>],
) -> Result<bool, Abort> {
    let taken = taken_keys::<D>(conn, project, members.iter().map(|&i| &group[i])).await?;
    let mut fresh = Vec::with_capacity(members.len());
    for &i in members {
        match group[i].idempotency_key.as_deref() {
            Some(key) if taken.contains(key) => {
                let Some(stored) =
                    fetch_redemption::<D>(conn, project, By::Key(key), false).await?
                else {
                    return Ok(false);
                };
                answers[i] = Some(Ok(RedeemOutcome::Replayed(stored)));
            }
            _ => fresh.push(i),
        }
    }
    let keys: BTreeSet<&str> = fresh
        .iter()
        .flat_map(|&i| group[i].quotas.iter().map(|c| c.key.as_str()))
        .collect();
    let stored = locked_usage::<D>(conn, project, &keys).await?;
    if !stored.is_empty() {
        let latest = fresh.iter().map(|&i| group[i].created_date).max();
        if let Some(at) = latest {
            if hold_expires::<D>(conn, project, stored.keys(), at).await? {
                return Ok(false);
            }
        }
    }
    let (recorded, totals) = decide(group, &fresh, &stored, answers);
    if recorded.is_empty() {
        return Ok(true);
    }
    let recorded: Vec<&Redemption> = recorded.iter().map(|&i| &group[i]).collect();
    if !insert_redemptions::<D>(conn, project, &recorded).await? {
        return Ok(false);
    }
    insert_charges_of::<D>(conn, project, &recorded).await?;
    if !write_usage::<D>(conn, project, &totals, &stored).await? {
        return Ok(false);
    }
    let events: Vec<OutboxEvent> = recorded
        .iter()
        .map(|r| OutboxEvent::for_redemption(r))
        .collect();
    outbox::append_all::<D>(conn, project, &events).await?;
    Ok(true)
}

/// Decides the `fresh` members in order against the running totals that
/// start at `stored` (0 for a key never charged). The members recorded,
/// and the new total of every key they charge; each refused member's
/// answer is set.
fn decide<'g>(
    group: &'g [Redemption],
    fresh: &[usize],
    stored: &HashMap<String, Decimal>,
    answers: &mut [Option<Result<RedeemOutcome>>],
) -> (Vec<usize>, HashMap<&'g str, Decimal>) {
    let mut totals: HashMap<&str, Decimal> = HashMap::new();
    let mut recorded = Vec::with_capacity(fresh.len());
    for &i in fresh {
        let r = &group[i];
        let mut granted: Vec<(&str, Decimal)> = Vec::with_capacity(r.quotas.len());
        let mut refused = None;
        for c in &r.quotas {
            let key = c.key.as_str();
            let used = granted
                .iter()
                .rev()
                .find(|(k, _)| *k == key)
                .map(|&(_, t)| t)
                .or_else(|| totals.get(key).copied())
                .or_else(|| stored.get(key).copied())
                .unwrap_or(Decimal::ZERO);
            match used.checked_add(c.amount) {
                Some(total) if total <= c.limit => granted.push((key, total)),
                _ => {
                    refused = Some(RedeemOutcome::QuotaExceeded {
                        key: c.key.clone(),
                        used,
                        limit: c.limit,
                    });
                    break;
                }
            }
        }
        if let Some(outcome) = refused {
            answers[i] = Some(Ok(outcome));
        } else {
            totals.extend(granted);
            recorded.push(i);
            answers[i] = Some(Ok(RedeemOutcome::Recorded(r.clone())));
        }
    }
    (recorded, totals)
}

/// Locks the stored usage rows of every key `group` charges, project by
/// project and key by key in order, where the database locks rows
/// (PostgreSQL): the savepoint path then takes its locks in the order a
/// batch takes them, instead of member by member, so that two groups
/// cannot wait for each other's keys. Not for a group with a code: a code
/// is locked before the quota keys, by redeems and holds alike, and keys
/// locked first would invert that order.
pub(crate) async fn lock_keys<D: Dialect>(
    conn: &mut Conn<D>,
    group: &[Redemption],
) -> Result<(), Abort> {
    if D::FOR_UPDATE.is_empty() || group.iter().any(|r| r.code.is_some()) {
        return Ok(());
    }
    let projects: BTreeSet<&str> = group.iter().map(|r| r.project_id.as_str()).collect();
    for project in projects {
        let keys: BTreeSet<&str> = group
            .iter()
            .filter(|r| r.project_id == project)
            .flat_map(|r| r.quotas.iter().map(|c| c.key.as_str()))
            .collect();
        locked_usage::<D>(conn, project, &keys).await?;
    }
    Ok(())
}

/// The idempotency keys of `members` that a stored redemption holds.
async fn taken_keys<'g, D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    members: impl Iterator<Item = &'g Redemption>,
) -> Result<HashSet<String>, Abort> {
    let keys: Vec<&str> = members
        .filter_map(|r| r.idempotency_key.as_deref())
        .collect();
    if keys.is_empty() {
        return Ok(HashSet::new());
    }
    let mut sql = Sql::new(
        "SELECT idempotency_key FROM redemption WHERE project_id = $1 AND idempotency_key IN (",
    )
    .bind(project);
    sql.push_list(keys).push(")");
    rows::<D>(conn, &sql)
        .await?
        .iter()
        .map(|row| Ok(row.col("idempotency_key")?))
        .collect()
}

/// The stored usage of `keys` (those ever charged), their rows locked
/// until the transaction ends, in key order.
async fn locked_usage<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    keys: &BTreeSet<&str>,
) -> Result<HashMap<String, Decimal>, Abort> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let mut sql = Sql::new(
        "SELECT quota_key, used FROM quota_usage WHERE project_id = $1 AND quota_key IN (",
    )
    .bind(project);
    sql.push_list(keys.iter().copied())
        .push(") ORDER BY quota_key")
        .push(D::FOR_UPDATE);
    rows::<D>(conn, &sql)
        .await?
        .iter()
        .map(|row| Ok((row.col("quota_key")?, row.col("used")?)))
        .collect()
}

/// Whether a hold's calendar charge to one of `keys` has expired by `at`:
/// the savepoint path gives it back before charging.
async fn hold_expires<'k, D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    keys: impl Iterator<Item = &'k String>,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<bool, Abort> {
    let mut sql = Sql::new(
        "SELECT quota_key FROM quota_mark WHERE project_id = $1 AND window_seconds = 0 \
         AND expires_at <= $2 AND quota_key IN (",
    )
    .bind(project)
    .bind(at);
    sql.push_list(keys).push(") LIMIT 1");
    Ok(!rows::<D>(conn, &sql).await?.is_empty())
}

/// Writes the new `totals`: a key never charged gets its row (whether none
/// appeared since [`locked_usage`] read them: on PostgreSQL another
/// transaction may have inserted it), a key charged before its new total
/// (its row is locked).
async fn write_usage<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    totals: &HashMap<&str, Decimal>,
    stored: &HashMap<String, Decimal>,
) -> Result<bool, Abort> {
    let mut keys: Vec<(&str, Decimal)> = totals.iter().map(|(&k, &t)| (k, t)).collect();
    keys.sort_unstable_by_key(|&(k, _)| k);
    let (old, new): (Vec<_>, Vec<_>) = keys.into_iter().partition(|(k, _)| stored.contains_key(*k));
    if !new.is_empty() {
        let sql = usage_rows(
            project,
            &new,
            " ON CONFLICT (project_id, quota_key) DO NOTHING",
        );
        if execute::<D>(conn, &sql).await? != new.len() as u64 {
            return Ok(false);
        }
    }
    if !old.is_empty() {
        let sql = usage_rows(
            project,
            &old,
            " ON CONFLICT (project_id, quota_key) DO UPDATE SET used = excluded.used",
        );
        execute::<D>(conn, &sql).await?;
    }
    Ok(true)
}

fn usage_rows(project: &str, keys: &[(&str, Decimal)], conflict: &str) -> Sql {
    let mut sql = Sql::new("INSERT INTO quota_usage (project_id, quota_key, used) VALUES ");
    for (n, &(key, total)) in keys.iter().enumerate() {
        sql.push(if n == 0 { "(" } else { ", (" });
        sql.push_list([Arg::from(project), Arg::from(key), Arg::from(total)])
            .push(")");
    }
    sql.push(conflict);
    sql
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use uuid::Uuid;

    use super::*;
    use crate::core::campaign::{QuotaCharge, QuotaWindow, TxStatus};

    fn redemption(key: Option<&str>, charges: &[(&str, i64, i64)]) -> Redemption {
        Redemption {
            id: Uuid::new_v4(),
            project_id: "p".into(),
            campaign_id: Uuid::nil(),
            campaign_code: "C".into(),
            campaign_version: 1,
            status: TxStatus::Complete,
            user_id: Some("u".into()),
            channel: None,
            idempotency_key: key.map(str::to_owned),
            request_fingerprint: None,
            action_txs: Vec::new(),
            quotas: charges
                .iter()
                .map(|&(k, amount, limit)| QuotaCharge {
                    key: k.into(),
                    amount: amount.into(),
                    limit: limit.into(),
                    window: None,
                })
                .collect(),
            code: None,
            created_date: Utc::now(),
            cancelled_date: None,
        }
    }

    #[test]
    fn a_group_with_a_code_a_window_or_a_key_twice_is_not_batched() {
        let plain = [redemption(Some("a"), &[("k", 1, 9)]), redemption(None, &[])];
        assert!(batchable(&plain));
        let mut code = plain.clone();
        code[1].code = Some("SAVE".into());
        assert!(!batchable(&code));
        let mut window = plain.clone();
        window[0].quotas[0].window = QuotaWindow::from_seconds(3600);
        assert!(window[0].quotas[0].window.is_some());
        assert!(!batchable(&window));
        let twice = [redemption(Some("a"), &[]), redemption(Some("a"), &[])];
        assert!(!batchable(&twice));
        let mut elsewhere = twice.clone();
        elsewhere[1].project_id = "q".into();
        assert!(batchable(&elsewhere));
    }

    #[test]
    fn members_are_decided_in_order_against_running_totals() {
        let group = [
            redemption(None, &[("hot", 1, 3), ("u1", 1, 1)]),
            // Refused by its second charge: its first is not granted.
            redemption(None, &[("hot", 1, 3), ("u1", 1, 1)]),
            redemption(None, &[("hot", 1, 3), ("u2", 1, 1)]),
            // The campaign-wide key is used up by the three before it.
            redemption(None, &[("hot", 1, 3), ("u3", 1, 1)]),
            // The same key twice in one plan counts twice.
            redemption(None, &[("u4", 1, 2), ("u4", 1, 2)]),
        ];
        let stored = HashMap::from([("hot".to_owned(), Decimal::ONE)]);
        let mut answers: Vec<_> = group.iter().map(|_| None).collect();
        let (recorded, totals) = decide(&group, &[0, 1, 2, 3, 4], &stored, &mut answers);
        assert_eq!(recorded, [0, 2, 4]);
        assert_eq!(totals["hot"], Decimal::from(3));
        assert_eq!(totals["u1"], Decimal::ONE);
        assert_eq!(totals["u4"], Decimal::from(2));
        assert!(!totals.contains_key("u3"));
        let refusal = |i: usize| match answers[i].clone() {
            Some(Ok(RedeemOutcome::QuotaExceeded { key, used, limit })) => (key, used, limit),
            other => panic!("member {i}: {other:?}"),
        };
        assert_eq!(refusal(1), ("u1".into(), Decimal::ONE, Decimal::ONE));
        assert_eq!(
            refusal(3),
            ("hot".into(), Decimal::from(3), Decimal::from(3))
        );
    }
}
