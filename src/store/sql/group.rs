//! Group commit of redeems: concurrent redeems of one store share a
//! transaction, so one commit (one fsync on SQLite, one WAL flush on
//! PostgreSQL) serves many of them.
//!
//! Each redeem joins the store's queue ([`super::queue`]) and waits for its
//! answer. A *leader* — a task of its own, started by a redeem that finds
//! fewer than [`Dialect::group_leaders`] running — takes every redeem
//! queued at that moment ([`MAX_GROUP`] at most; it never waits for more,
//! so an idle store runs a lone redeem at once), runs them in one write
//! transaction, commits once, and only then answers each. It loops until
//! the queue is empty, then ends.
//!
//! A group is first written as one batch ([`batch`]: a few statements for
//! the whole group, its members decided in memory against running quota
//! totals). A group the batch cannot decide exactly gives way to the
//! savepoint path below.
//!
//! On the savepoint path a group without a code first locks the stored
//! usage rows of every key it charges, in key order as a batch does
//! ([`batch::lock_keys`]). Each member stays all-or-nothing on its own: it
//! runs inside a `SAVEPOINT`, and a member refused (quota, code) or
//! failing is rolled back to its savepoint alone while the others go on.
//! A lone redeem runs without a savepoint, exactly as
//! [`redemption::try_redeem`] always has.
//! An idempotency key used twice in one group behaves as it does across
//! transactions: the second member finds the first's record (its own
//! transaction's) and is a replay.
//!
//! Nothing is answered before the commit: when the commit (or the
//! transaction) fails, every member gets the error and none was
//! acknowledged. An error the dialect calls retryable (a PostgreSQL
//! deadlock victim) runs the whole group again, as [`retry`] does for any
//! transaction. A leader runs to completion whatever its callers do (they
//! may stop waiting; the group goes on), bounded by
//! [`Dialect::WRITE_LIMIT`] where the dialect has one.

use tokio::sync::oneshot;

use super::dialect::{retry, Abort, Dialect};
use super::queue::Leader;
use super::redemption::{self, Step};
use super::{batch, verify};
use crate::core::campaign::Redemption;
use crate::store::{RedeemOutcome, RedemptionPlan};
use crate::{Error, Result};

/// Most redeems in one group: as many as the clients of the load runs in
/// `docs/benchmarks.md` (64), so that one group can hold every redeem in
/// flight there; a larger group only lengthens the transaction.
pub(crate) const MAX_GROUP: usize = 64;

/// The savepoint of a group's member, and the statements between two
/// members (one round trip).
const FIRST: &str = "SAVEPOINT redeem";
const NEXT: &str = "RELEASE SAVEPOINT redeem; SAVEPOINT redeem";
const UNDO: &str = "ROLLBACK TO SAVEPOINT redeem";

/// [`RedemptionStore::redeem`](crate::store::RedemptionStore::redeem):
/// records `plan` in a group with whatever other redeems of `db` are queued
/// (see the module docs); outside a Tokio runtime, alone.
pub(crate) async fn redeem<D: Dialect>(db: &D, plan: RedemptionPlan) -> Result<RedeemOutcome> {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return retry::<D, _, _, _>(|| redemption::try_redeem(db, &plan)).await;
    };
    let (tx, rx) = oneshot::channel();
    if let Some(leader) = db.redeem_queue().push((plan, tx), db.group_leaders()) {
        let db = db.clone();
        runtime.spawn(async move { lead_groups(&db, leader).await });
    }
    rx.await.unwrap_or_else(|_| {
        Err(Error::unavailable(
            "store write not run: its leader stopped",
        ))
    })
}

/// Runs groups until the queue is empty.
async fn lead_groups<D: Dialect>(db: &D, mut leader: Leader) {
    while let Some(group) = leader.next_group(MAX_GROUP) {
        let (plans, replies): (Vec<RedemptionPlan>, Vec<_>) = group.into_iter().unzip();
        let run = run_group(db, plans);
        let answers = match D::WRITE_LIMIT {
            None => run.await,
            Some(limit) => tokio::time::timeout(limit, run).await.unwrap_or_else(|_| {
                Err(Error::unavailable(format!(
                    "a group of redeems did not finish within {} s",
                    limit.as_secs()
                )))
            }),
        };
        answer(replies, answers);
    }
}

/// Sends each member its answer; all of them the error of a failed group.
fn answer(
    replies: Vec<oneshot::Sender<Result<RedeemOutcome>>>,
    answers: Result<Vec<Result<RedeemOutcome>>>,
) {
    // A caller that stopped waiting is not an error.
    match answers {
        Ok(answers) => {
            for (reply, answer) in replies.into_iter().zip(answers) {
                let _ = reply.send(answer);
            }
        }
        Err(e) => {
            for reply in replies {
                let _ = reply.send(Err(e.clone()));
            }
        }
    }
}

/// One group: a lone redeem as it always ran, more in one transaction with
/// a savepoint each. The answers, in order; an error when the group's
/// transaction failed (nothing of it committed).
async fn run_group<D: Dialect>(
    db: &D,
    plans: Vec<RedemptionPlan>,
) -> Result<Vec<Result<RedeemOutcome>>> {
    if let [plan] = plans.as_slice() {
        return Ok(vec![
            retry::<D, _, _, _>(|| redemption::try_redeem(db, plan)).await,
        ]);
    }
    let verify: Vec<bool> = plans.iter().map(|p| p.verify_campaign).collect();
    let group: Vec<Redemption> = plans.into_iter().map(|p| p.redemption).collect();
    let (group, verify) = (group.as_slice(), verify.as_slice());
    if batch::batchable(group) {
        if let Some(answers) = retry::<D, _, _, _>(|| try_batch(db, group, verify)).await? {
            return Ok(answers);
        }
    }
    retry::<D, _, _, _>(|| try_group(db, group, verify)).await
}

/// The group as one batch ([`batch`]); `None` when it gave way (nothing of
/// it committed).
async fn try_batch<D: Dialect>(
    db: &D,
    group: &[Redemption],
    verify: &[bool],
) -> Result<Option<Vec<Result<RedeemOutcome>>>, Abort> {
    let mut tx = db.begin_write().await?;
    // A member whose campaign changed is rare: the savepoint path answers
    // it alone.
    let checked = verify::campaigns::<D>(tx.conn(), group, verify).await?;
    if checked.iter().any(Option::is_some) {
        tx.rollback().await?;
        return Ok(None);
    }
    match batch::write::<D>(tx.conn(), group).await {
        Ok(Some(answers)) => {
            tx.commit().await?;
            Ok(Some(answers))
        }
        // The whole group again.
        Err(Abort::Db(e)) if D::is_retryable(&e) => Err(Abort::Db(e)),
        // Member by member: an error fails only its own member there.
        Ok(None) | Err(_) => {
            tx.rollback().await?;
            Ok(None)
        }
    }
}

async fn try_group<D: Dialect>(
    db: &D,
    group: &[Redemption],
    verify: &[bool],
) -> Result<Vec<Result<RedeemOutcome>>, Abort> {
    let mut tx = db.begin_write().await?;
    // First, before any other lock (see `verify`).
    let mut checked = verify::campaigns::<D>(tx.conn(), group, verify).await?;
    batch::lock_keys::<D>(tx.conn(), group).await?;
    let mut answers = Vec::with_capacity(group.len());
    let mut savepoint = false;
    for (i, r) in group.iter().enumerate() {
        if let Some(refused) = checked[i].take() {
            answers.push(Ok(refused));
            continue;
        }
        D::execute_script(tx.conn(), if savepoint { NEXT } else { FIRST }).await?;
        savepoint = true;
        let answer = match redemption::redeem_steps::<D>(tx.conn(), r).await {
            Ok(Step::Recorded) => Ok(RedeemOutcome::Recorded(r.clone())),
            Ok(Step::Undo(outcome)) => {
                D::execute_script(tx.conn(), UNDO).await?;
                Ok(*outcome)
            }
            // The whole group again (it has not committed).
            Err(Abort::Db(e)) if D::is_retryable(&e) => return Err(Abort::Db(e)),
            // This member alone fails; the others go on.
            Err(e) => {
                D::execute_script(tx.conn(), UNDO).await?;
                Err(e)
            }
        };
        answers.push(answer.map_err(Abort::into_error::<D>));
    }
    tx.commit().await?;
    Ok(answers)
}
