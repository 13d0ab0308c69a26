//! How the SQL stores implement the store traits: every call of a role
//! listed once, as a read or a write, and passed to the store's own policy.
//!
//! Each SQL store writes its calls as inherent methods with the trait's
//! names and signatures (`impl SqliteStore { async fn redeem(…) … }`), and
//! implements the trait with one line, [`store_calls!`], which sends every
//! read through the store's `read_call` and every write through its
//! `write_call`:
//!
//! - `write_call(|store| future)` runs the write **to completion whatever
//!   happens to the caller**: it owns its inputs (cloned here) and a clone
//!   of the store, runs as a task of its own and is awaited through its
//!   `JoinHandle`. A caller that goes away — an HTTP client closing its
//!   connection, a request timing out, an embedding program dropping the
//!   future — only stops waiting; it cannot cut a transaction midway, so
//!   no connection is left inside a transaction and no redemption is left
//!   half-known: it is committed (and a retry with its idempotency key
//!   finds it) or it never was. The task is bounded by the store's own
//!   timeouts, never by the caller.
//! - `read_call(future)` runs a read in place: dropping a read loses
//!   nothing. (PostgreSQL bounds it in time; SQLite has no network to
//!   wait on.)
//!
//! Inherent methods win over trait methods of the same name, so the
//! generated trait method calls the inherent one (`<Store>::redeem`), and
//! code inside a store module that calls `self.campaign(…)` gets the plain
//! call, without a second policy around it.

/// Implements one store trait for a SQL store whose module defines the
/// trait's calls as inherent methods of the same names, and whose type has
/// `read_call` and `write_call` (see the module docs). Invoked in the module
/// of those methods, as `store_calls!(impl CampaignStore for SqliteStore);`.
macro_rules! store_calls {
    (impl CampaignStore for $store:ty) => {
        impl CampaignStore for $store {
            async fn insert_campaign_within(
                &self,
                campaign: &$crate::core::campaign::Campaign,
                max: u64,
            ) -> $crate::Result<()> {
                let campaign = campaign.clone();
                self.write_call(move |s| async move {
                    <$store>::insert_campaign_within(&s, &campaign, max).await
                })
                .await
            }

            async fn update_campaign(
                &self,
                campaign: &$crate::core::campaign::Campaign,
                expected_version: i64,
            ) -> $crate::Result<()> {
                let campaign = campaign.clone();
                self.write_call(move |s| async move {
                    <$store>::update_campaign(&s, &campaign, expected_version).await
                })
                .await
            }

            async fn delete_campaign(&self, project: &str, id: uuid::Uuid) -> $crate::Result<bool> {
                let project = project.to_owned();
                self.write_call(move |s| async move {
                    <$store>::delete_campaign(&s, &project, id).await
                })
                .await
            }

            async fn campaign(
                &self,
                project: &str,
                id: uuid::Uuid,
            ) -> $crate::Result<Option<$crate::core::campaign::Campaign>> {
                self.read_call(<$store>::campaign(self, project, id)).await
            }

            async fn campaign_by_code(
                &self,
                project: &str,
                ref_code: &str,
            ) -> $crate::Result<Option<$crate::core::campaign::Campaign>> {
                self.read_call(<$store>::campaign_by_code(self, project, ref_code))
                    .await
            }

            async fn list_campaigns(
                &self,
                project: &str,
                query: &$crate::store::CampaignQuery,
            ) -> $crate::Result<$crate::store::Page<$crate::core::campaign::Campaign>> {
                self.read_call(<$store>::list_campaigns(self, project, query))
                    .await
            }

            async fn all_campaigns(
                &self,
                project: &str,
            ) -> $crate::Result<Vec<$crate::core::campaign::Campaign>> {
                self.read_call(<$store>::all_campaigns(self, project)).await
            }

            async fn catalog_version(&self, project: &str) -> $crate::Result<i64> {
                self.read_call(<$store>::catalog_version(self, project))
                    .await
            }

            async fn count_campaigns(&self, project: &str) -> $crate::Result<u64> {
                self.read_call(<$store>::count_campaigns(self, project))
                    .await
            }
        }
    };

    (impl RedemptionStore for $store:ty) => {
        impl RedemptionStore for $store {
            async fn redeem(
                &self,
                plan: &$crate::store::RedemptionPlan,
            ) -> $crate::Result<$crate::store::RedeemOutcome> {
                let plan = plan.clone();
                self.write_call(move |s| async move { <$store>::redeem(&s, &plan).await })
                    .await
            }

            async fn cancel_redemption(
                &self,
                project: &str,
                id: uuid::Uuid,
                at: chrono::DateTime<chrono::Utc>,
            ) -> $crate::Result<Option<$crate::core::campaign::Redemption>> {
                let project = project.to_owned();
                self.write_call(move |s| async move {
                    <$store>::cancel_redemption(&s, &project, id, at).await
                })
                .await
            }

            async fn redemption_by_key(
                &self,
                project: &str,
                idempotency_key: &str,
            ) -> $crate::Result<Option<$crate::core::campaign::Redemption>> {
                self.read_call(<$store>::redemption_by_key(self, project, idempotency_key))
                    .await
            }

            async fn redemption(
                &self,
                project: &str,
                id: uuid::Uuid,
            ) -> $crate::Result<Option<$crate::core::campaign::Redemption>> {
                self.read_call(<$store>::redemption(self, project, id))
                    .await
            }

            async fn list_redemptions(
                &self,
                project: &str,
                query: &$crate::store::RedemptionQuery,
            ) -> $crate::Result<$crate::store::Page<$crate::core::campaign::Redemption>> {
                self.read_call(<$store>::list_redemptions(self, project, query))
                    .await
            }

            async fn quota_usage(
                &self,
                project: &str,
                keys: &[String],
            ) -> $crate::Result<std::collections::HashMap<String, rust_decimal::Decimal>> {
                self.read_call(<$store>::quota_usage(self, project, keys))
                    .await
            }

            async fn quota_usage_by_prefix(
                &self,
                project: &str,
                prefix: &str,
                after: Option<&str>,
                limit: u32,
            ) -> $crate::Result<Vec<(String, rust_decimal::Decimal)>> {
                self.read_call(<$store>::quota_usage_by_prefix(
                    self, project, prefix, after, limit,
                ))
                .await
            }

            async fn campaign_quota_usage(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
            ) -> $crate::Result<Vec<$crate::core::campaign::QuotaUsage>> {
                self.read_call(<$store>::campaign_quota_usage(self, project, campaign_id))
                    .await
            }
        }
    };

    (impl ContentStore for $store:ty) => {
        impl ContentStore for $store {
            async fn insert_content(
                &self,
                write: &$crate::core::consent::ContentWrite,
            ) -> $crate::Result<$crate::core::consent::ContentRecord> {
                let write = write.clone();
                self.write_call(move |s| async move { <$store>::insert_content(&s, &write).await })
                    .await
            }

            async fn replace_content(
                &self,
                write: &$crate::core::consent::ContentWrite,
                expected_version: i64,
            ) -> $crate::Result<$crate::core::consent::ContentRecord> {
                let write = write.clone();
                self.write_call(move |s| async move {
                    <$store>::replace_content(&s, &write, expected_version).await
                })
                .await
            }

            async fn content(
                &self,
                project: &str,
                content_type: $crate::core::consent::ContentType,
                id: &str,
            ) -> $crate::Result<Option<$crate::core::consent::ContentRecord>> {
                self.read_call(<$store>::content(self, project, content_type, id))
                    .await
            }

            async fn content_versions(
                &self,
                project: &str,
                content_type: $crate::core::consent::ContentType,
                id: &str,
            ) -> $crate::Result<Vec<$crate::core::consent::ContentRecord>> {
                self.read_call(<$store>::content_versions(self, project, content_type, id))
                    .await
            }

            async fn list_content(
                &self,
                project: &str,
                content_type: $crate::core::consent::ContentType,
                query: &$crate::core::consent::ContentQuery,
            ) -> $crate::Result<$crate::store::Page<$crate::core::consent::ContentRecord>> {
                self.read_call(<$store>::list_content(self, project, content_type, query))
                    .await
            }
        }
    };

    (impl ConsentLedger for $store:ty) => {
        impl ConsentLedger for $store {
            async fn consents_of_app(
                &self,
                project: &str,
                app: &str,
            ) -> $crate::Result<Vec<$crate::core::consent::ContentRecord>> {
                self.read_call(<$store>::consents_of_app(self, project, app))
                    .await
            }

            async fn acceptance_versions(
                &self,
                project: &str,
                subject: &str,
            ) -> $crate::Result<Vec<$crate::core::consent::ContentRecord>> {
                self.read_call(<$store>::acceptance_versions(self, project, subject))
                    .await
            }

            async fn purpose_names(
                &self,
                project: &str,
                codes: &[String],
            ) -> $crate::Result<Vec<$crate::core::consent::ContentRecord>> {
                self.read_call(<$store>::purpose_names(self, project, codes))
                    .await
            }

            async fn append_purpose_event(
                &self,
                event: &$crate::core::consent::PurposeEvent,
            ) -> $crate::Result<$crate::core::consent::PurposeEvent> {
                let event = event.clone();
                self.write_call(
                    move |s| async move { <$store>::append_purpose_event(&s, &event).await },
                )
                .await
            }

            async fn purpose_events(
                &self,
                project: &str,
                subject: &str,
                app: Option<&str>,
            ) -> $crate::Result<Vec<$crate::core::consent::PurposeEvent>> {
                self.read_call(<$store>::purpose_events(self, project, subject, app))
                    .await
            }
        }
    };

    (impl LedgerStore for $store:ty) => {
        impl LedgerStore for $store {
            async fn ledger_entries(
                &self,
                project: &str,
                after: i64,
                limit: u32,
            ) -> $crate::Result<Vec<$crate::store::StoredEntry>> {
                self.read_call(<$store>::ledger_entries(self, project, after, limit))
                    .await
            }

            async fn ledger_entries_of(
                &self,
                project: &str,
                record_id: &str,
            ) -> $crate::Result<Vec<$crate::store::StoredEntry>> {
                self.read_call(<$store>::ledger_entries_of(self, project, record_id))
                    .await
            }

            async fn ledger_head(
                &self,
                project: &str,
            ) -> $crate::Result<Option<$crate::core::consent::ledger::LedgerHead>> {
                self.read_call(<$store>::ledger_head(self, project)).await
            }

            async fn erase_subject(
                &self,
                project: &str,
                subject: &str,
                pseudonym: &str,
            ) -> $crate::Result<$crate::core::consent::erasure::ErasureCounts> {
                let (project, subject, pseudonym) =
                    (project.to_owned(), subject.to_owned(), pseudonym.to_owned());
                self.write_call(move |s| async move {
                    <$store>::erase_subject(&s, &project, &subject, &pseudonym).await
                })
                .await
            }
        }
    };
}

pub(crate) use store_calls;

use std::future::Future;
use std::time::Duration;

use crate::{Error, ErrorKind, Result};

/// Runs `work` as a task of its own and waits for it, `wait` at most when
/// given: the caller going away (or giving up) does not stop the work.
///
/// Outside a Tokio runtime (the SQL drivers need one anyway) the work runs
/// in place. A panic of the work is a panic of the caller, as it would have
/// been without the task.
pub(crate) async fn detached<T, F>(work: F, wait: Option<Duration>) -> Result<T>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return work.await;
    };
    let task = runtime.spawn(work);
    let joined = match wait {
        None => task.await,
        Some(wait) => match tokio::time::timeout(wait, task).await {
            Ok(joined) => joined,
            // The task goes on (a dropped JoinHandle detaches it).
            Err(_) => return Err(outcome_unknown(wait)),
        },
    };
    match joined {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(Error::unavailable(format!("store write not run: {e}"))),
    }
}

/// The error of a caller that stopped waiting for a write still running.
fn outcome_unknown(wait: Duration) -> Error {
    Error::new(
        ErrorKind::Unavailable,
        "store_timeout",
        format!(
            "the store did not answer within {} ms; the write may still complete: \
             retry with the same idempotency key, or read before writing again",
            wait.as_millis()
        ),
    )
}

/// The error of a read that took longer than `limit`.
#[cfg(feature = "postgres")]
pub(crate) fn read_timed_out(limit: Duration) -> Error {
    Error::new(
        ErrorKind::Unavailable,
        "store_timeout",
        format!("the store did not answer within {} ms", limit.as_millis()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// Dropping the caller does not stop the work; a caller that stops
    /// waiting gets `store_timeout` while the work still finishes.
    #[tokio::test]
    async fn the_work_outlives_its_caller() {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let work = async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            flag.store(true, Ordering::SeqCst);
            Ok(())
        };
        let caller = tokio::spawn(detached(work, None));
        tokio::time::sleep(Duration::from_millis(10)).await;
        caller.abort();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            done.load(Ordering::SeqCst),
            "the aborted caller stopped the work"
        );

        done.store(false, Ordering::SeqCst);
        let flag = Arc::clone(&done);
        let work = async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            flag.store(true, Ordering::SeqCst);
            Ok(())
        };
        let e = detached(work, Some(Duration::from_millis(5)))
            .await
            .unwrap_err();
        assert_eq!(
            (e.kind(), e.code()),
            (ErrorKind::Unavailable, "store_timeout")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(done.load(Ordering::SeqCst));
    }
}
