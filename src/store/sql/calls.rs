//! How the SQL stores implement the store traits: every call of a role
//! listed once, as a read or a write, and passed to the store's own policy.
//!
//! The calls themselves are the generic functions of the shared
//! implementation (`campaign.rs`, `redemption.rs`, `consent.rs`,
//! `ledger.rs` beside this file, over [`Dialect`](super::dialect::Dialect)).
//! Each SQL store implements every role with one line,
//! `store_calls!(SqliteStore);`, which sends every read through the
//! store's `read_call` and every write through its `write_call`:
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

/// Implements every store role (and the methods every SQL store has, see
/// `common_methods!`) for a SQL store type that implements
/// [`Dialect`](super::dialect::Dialect) and has `read_call` and
/// `write_call` (see the module docs): `store_calls!(SqliteStore);`. One
/// role alone: `store_calls!(impl CampaignStore for SqliteStore);`.
macro_rules! store_calls {
    ($store:ty) => {
        $crate::store::sql::calls::store_calls!(impl CampaignStore for $store);
        $crate::store::sql::calls::store_calls!(impl RedemptionStore for $store);
        $crate::store::sql::calls::store_calls!(impl CodeStore for $store);
        $crate::store::sql::calls::store_calls!(impl ContentStore for $store);
        $crate::store::sql::calls::store_calls!(impl ConsentLedger for $store);
        $crate::store::sql::calls::store_calls!(impl LedgerStore for $store);
        $crate::store::sql::calls::store_calls!(impl HistoryStore for $store);
        $crate::store::sql::hold::hold_calls!($store);
        $crate::store::sql::outbox::outbox_calls!($store);
        $crate::store::sql::calls::store_calls!(impl FileStore for $store);
        $crate::store::sql::calls::common_methods!($store);
    };

    (impl CampaignStore for $store:ty) => {
        impl $crate::store::CampaignStore for $store {
            async fn insert_campaign_within(
                &self,
                campaign: &$crate::core::campaign::Campaign,
                max: u64,
            ) -> $crate::Result<()> {
                let campaign = campaign.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::campaign::insert_campaign_within(&s, &campaign, max).await
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
                    $crate::store::sql::campaign::update_campaign(&s, &campaign, expected_version)
                        .await
                })
                .await
            }

            async fn delete_campaign(&self, project: &str, id: uuid::Uuid) -> $crate::Result<bool> {
                let project = project.to_owned();
                self.write_call(move |s| async move {
                    $crate::store::sql::campaign::delete_campaign(&s, &project, id).await
                })
                .await
            }

            async fn campaign(
                &self,
                project: &str,
                id: uuid::Uuid,
            ) -> $crate::Result<Option<$crate::core::campaign::Campaign>> {
                self.read_call($crate::store::sql::campaign::campaign(self, project, id))
                    .await
            }

            async fn campaign_by_code(
                &self,
                project: &str,
                ref_code: &str,
            ) -> $crate::Result<Option<$crate::core::campaign::Campaign>> {
                self.read_call($crate::store::sql::campaign::campaign_by_code(
                    self, project, ref_code,
                ))
                .await
            }

            async fn campaigns_by_code(
                &self,
                project: &str,
                ref_codes: &[&str],
            ) -> $crate::Result<Vec<$crate::store::NamedCampaign>> {
                self.read_call($crate::store::sql::campaign::campaigns_by_code(
                    self, project, ref_codes,
                ))
                .await
            }

            async fn list_campaigns(
                &self,
                project: &str,
                query: &$crate::store::CampaignQuery,
            ) -> $crate::Result<$crate::store::Page<$crate::core::campaign::Campaign>> {
                self.read_call($crate::store::sql::campaign::list_campaigns(
                    self, project, query,
                ))
                .await
            }

            async fn all_campaigns(
                &self,
                project: &str,
            ) -> $crate::Result<Vec<$crate::core::campaign::Campaign>> {
                self.read_call($crate::store::sql::campaign::all_campaigns(self, project))
                    .await
            }

            async fn catalog_version(&self, project: &str) -> $crate::Result<i64> {
                self.read_call($crate::store::sql::campaign::catalog_version(self, project))
                    .await
            }

            async fn count_campaigns(&self, project: &str) -> $crate::Result<u64> {
                self.read_call($crate::store::sql::campaign::count_campaigns(self, project))
                    .await
            }

            async fn campaign_revisions(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
                page: u32,
                size: u32,
            ) -> $crate::Result<
                $crate::store::Page<$crate::core::campaign::CampaignRevision>,
            > {
                self.read_call($crate::store::sql::revision::campaign_revisions(
                    self,
                    project,
                    campaign_id,
                    page,
                    size,
                ))
                .await
            }

            async fn campaign_revision(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
                revision: i64,
            ) -> $crate::Result<Option<$crate::core::campaign::CampaignRevision>> {
                self.read_call($crate::store::sql::revision::campaign_revision(
                    self,
                    project,
                    campaign_id,
                    revision,
                ))
                .await
            }
        }
    };

    (impl RedemptionStore for $store:ty) => {
        impl $crate::store::RedemptionStore for $store {
            async fn redeem(
                &self,
                plan: &$crate::store::RedemptionPlan,
            ) -> $crate::Result<$crate::store::RedeemOutcome> {
                let plan = plan.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::group::redeem(&s, plan).await
                })
                .await
            }

            async fn code(
                &self,
                project: &str,
                normalized: &str,
            ) -> $crate::Result<Option<$crate::core::campaign::codes::PromoCode>> {
                self.read_call($crate::store::sql::codes::code(self, project, normalized))
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
                    $crate::store::sql::redemption::cancel_redemption(&s, &project, id, at).await
                })
                .await
            }

            async fn redemption_by_key(
                &self,
                project: &str,
                idempotency_key: &str,
            ) -> $crate::Result<Option<$crate::core::campaign::Redemption>> {
                self.read_call($crate::store::sql::redemption::redemption_by_key(
                    self,
                    project,
                    idempotency_key,
                ))
                .await
            }

            async fn redemption(
                &self,
                project: &str,
                id: uuid::Uuid,
            ) -> $crate::Result<Option<$crate::core::campaign::Redemption>> {
                self.read_call($crate::store::sql::redemption::redemption(
                    self, project, id,
                ))
                .await
            }

            async fn list_redemptions(
                &self,
                project: &str,
                query: &$crate::store::RedemptionQuery,
            ) -> $crate::Result<$crate::store::Page<$crate::core::campaign::Redemption>> {
                self.read_call($crate::store::sql::redemption::list_redemptions(
                    self, project, query,
                ))
                .await
            }

            async fn quota_usage(
                &self,
                project: &str,
                keys: &[String],
            ) -> $crate::Result<std::collections::HashMap<String, rust_decimal::Decimal>> {
                self.read_call($crate::store::sql::redemption::quota_usage(
                    self, project, keys,
                ))
                .await
            }

            async fn counter_usage(
                &self,
                project: &str,
                counters: &[$crate::store::Counter],
                at: chrono::DateTime<chrono::Utc>,
            ) -> $crate::Result<Vec<$crate::store::CounterUsage>> {
                self.read_call($crate::store::sql::redemption::counter_usage(
                    self, project, counters, at,
                ))
                .await
            }

            async fn charged_keys(
                &self,
                project: &str,
                after: Option<i64>,
            ) -> $crate::Result<$crate::store::ChargedKeys> {
                self.read_call($crate::store::sql::redemption::charged_keys(
                    self, project, after,
                ))
                .await
            }

            async fn quota_usage_by_prefix(
                &self,
                project: &str,
                prefix: &str,
                after: Option<&str>,
                limit: u32,
            ) -> $crate::Result<Vec<(String, rust_decimal::Decimal)>> {
                self.read_call($crate::store::sql::redemption::quota_usage_by_prefix(
                    self, project, prefix, after, limit,
                ))
                .await
            }

            async fn campaign_quota_usage(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
            ) -> $crate::Result<Vec<$crate::core::campaign::QuotaUsage>> {
                self.read_call($crate::store::sql::redemption::campaign_quota_usage(
                    self,
                    project,
                    campaign_id,
                ))
                .await
            }
        }
    };

    (impl CodeStore for $store:ty) => {
        impl $crate::store::CodeStore for $store {
            async fn insert_codes(&self, batch: &$crate::store::CodeBatch) -> $crate::Result<u64> {
                let batch = batch.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::codes::insert_codes(&s, &batch).await
                })
                .await
            }

            async fn list_codes(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
                page: u32,
                size: u32,
            ) -> $crate::Result<$crate::store::Page<$crate::core::campaign::codes::PromoCode>> {
                self.read_call($crate::store::sql::codes::list_codes(
                    self,
                    project,
                    campaign_id,
                    page,
                    size,
                ))
                .await
            }

            async fn codes_after(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
                after: Option<&str>,
                limit: u32,
            ) -> $crate::Result<Vec<$crate::core::campaign::codes::PromoCode>> {
                self.read_call($crate::store::sql::codes::codes_after(
                    self,
                    project,
                    campaign_id,
                    after,
                    limit,
                ))
                .await
            }

            async fn set_code_active(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
                normalized: &str,
                active: bool,
            ) -> $crate::Result<Option<$crate::core::campaign::codes::PromoCode>> {
                let project = project.to_owned();
                let normalized = normalized.to_owned();
                self.write_call(move |s| async move {
                    $crate::store::sql::codes::set_code_active(
                        &s,
                        &project,
                        campaign_id,
                        &normalized,
                        active,
                    )
                    .await
                })
                .await
            }
        }
    };

    (impl ContentStore for $store:ty) => {
        impl $crate::store::ContentStore for $store {
            async fn insert_content(
                &self,
                write: &$crate::core::consent::ContentWrite,
            ) -> $crate::Result<$crate::core::consent::ContentRecord> {
                let write = write.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::consent::insert_content(&s, &write).await
                })
                .await
            }

            async fn insert_content_with_entry(
                &self,
                write: &$crate::core::consent::ContentWrite,
            ) -> $crate::Result<(
                $crate::core::consent::ContentRecord,
                Option<$crate::core::consent::receipt::EntryRef>,
            )> {
                let write = write.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::consent::insert_content_with_entry(&s, &write).await
                })
                .await
            }

            async fn replace_content(
                &self,
                write: &$crate::core::consent::ContentWrite,
                expected_version: i64,
            ) -> $crate::Result<$crate::core::consent::ContentRecord> {
                let write = write.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::consent::replace_content(&s, &write, expected_version).await
                })
                .await
            }

            async fn content(
                &self,
                project: &str,
                content_type: $crate::core::consent::ContentType,
                id: &str,
            ) -> $crate::Result<Option<$crate::core::consent::ContentRecord>> {
                self.read_call($crate::store::sql::consent::content(
                    self,
                    project,
                    content_type,
                    id,
                ))
                .await
            }

            async fn content_versions(
                &self,
                project: &str,
                content_type: $crate::core::consent::ContentType,
                id: &str,
            ) -> $crate::Result<Vec<$crate::core::consent::ContentRecord>> {
                self.read_call($crate::store::sql::consent::content_versions(
                    self,
                    project,
                    content_type,
                    id,
                ))
                .await
            }

            async fn list_content(
                &self,
                project: &str,
                content_type: $crate::core::consent::ContentType,
                query: &$crate::core::consent::ContentQuery,
            ) -> $crate::Result<$crate::store::Page<$crate::core::consent::ContentRecord>> {
                self.read_call($crate::store::sql::consent::list_content(
                    self,
                    project,
                    content_type,
                    query,
                ))
                .await
            }
        }
    };

    (impl ConsentLedger for $store:ty) => {
        impl $crate::store::ConsentLedger for $store {
            async fn consents_of_app(
                &self,
                project: &str,
                app: &str,
            ) -> $crate::Result<Vec<$crate::core::consent::ContentRecord>> {
                self.read_call($crate::store::sql::consent::consents_of_app(
                    self, project, app,
                ))
                .await
            }

            async fn acceptance_versions(
                &self,
                project: &str,
                subject: &str,
            ) -> $crate::Result<Vec<$crate::core::consent::ContentRecord>> {
                self.read_call($crate::store::sql::consent::acceptance_versions(
                    self, project, subject,
                ))
                .await
            }

            async fn purpose_names(
                &self,
                project: &str,
                codes: &[String],
            ) -> $crate::Result<Vec<$crate::core::consent::ContentRecord>> {
                self.read_call($crate::store::sql::consent::purpose_names(
                    self, project, codes,
                ))
                .await
            }

            async fn append_purpose_event(
                &self,
                event: &$crate::core::consent::PurposeEvent,
            ) -> $crate::Result<$crate::core::consent::PurposeEvent> {
                let event = event.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::consent::append_purpose_event(&s, &event).await
                })
                .await
            }

            async fn purpose_events(
                &self,
                project: &str,
                subject: &str,
                app: Option<&str>,
            ) -> $crate::Result<Vec<$crate::core::consent::PurposeEvent>> {
                self.read_call($crate::store::sql::consent::purpose_events(
                    self, project, subject, app,
                ))
                .await
            }
        }
    };

    (impl HistoryStore for $store:ty) => {
        impl $crate::store::HistoryStore for $store {
            async fn subject_history(
                &self,
                project: &str,
                subject: &str,
                query: &$crate::core::consent::evidence::HistoryQuery,
                now: chrono::DateTime<chrono::Utc>,
            ) -> $crate::Result<$crate::store::Page<$crate::core::consent::evidence::SubjectEvent>>
            {
                self.read_call($crate::store::sql::history::subject_history(
                    self, project, subject, query, now,
                ))
                .await
            }

            async fn expired_acceptances(
                &self,
                project: &str,
                now: chrono::DateTime<chrono::Utc>,
                page: u32,
                size: u32,
            ) -> $crate::Result<$crate::store::Page<$crate::core::consent::history::ExpiredAcceptance>>
            {
                self.read_call($crate::store::sql::history::expired_acceptances(
                    self, project, now, page, size,
                ))
                .await
            }

            async fn ended_acceptances(
                &self,
                project: &str,
                before: chrono::DateTime<chrono::Utc>,
                limit: u32,
            ) -> $crate::Result<Vec<(String, String)>> {
                self.read_call($crate::store::sql::history::ended_acceptances(
                    self, project, before, limit,
                ))
                .await
            }

            async fn purge_acceptance(
                &self,
                project: &str,
                id: &str,
                pseudonym: &str,
            ) -> $crate::Result<$crate::core::consent::erasure::ErasureCounts> {
                let (project, id, pseudonym) =
                    (project.to_owned(), id.to_owned(), pseudonym.to_owned());
                self.write_call(move |s| async move {
                    $crate::store::sql::history::purge_acceptance(&s, &project, &id, &pseudonym)
                        .await
                })
                .await
            }
        }
    };

    (impl FileStore for $store:ty) => {
        impl $crate::store::FileStore for $store {
            async fn put_file(
                &self,
                file: &$crate::core::consent::file::StoredFile,
            ) -> $crate::Result<($crate::core::consent::file::StoredFile, bool)> {
                let file = file.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::file::put_file(&s, &file).await
                })
                .await
            }

            async fn file(
                &self,
                project: &str,
                sha256: &str,
            ) -> $crate::Result<Option<$crate::core::consent::file::StoredFile>> {
                self.read_call($crate::store::sql::file::file(self, project, sha256))
                    .await
            }

            async fn file_exists(&self, project: &str, sha256: &str) -> $crate::Result<bool> {
                self.read_call($crate::store::sql::file::file_exists(self, project, sha256))
                    .await
            }
        }
    };

    (impl LedgerStore for $store:ty) => {
        impl $crate::store::LedgerStore for $store {
            async fn ledger_entries(
                &self,
                project: &str,
                after: i64,
                limit: u32,
            ) -> $crate::Result<Vec<$crate::store::StoredEntry>> {
                self.read_call($crate::store::sql::ledger::ledger_entries(
                    self, project, after, limit,
                ))
                .await
            }

            async fn ledger_entries_of(
                &self,
                project: &str,
                record_id: &str,
            ) -> $crate::Result<Vec<$crate::store::StoredEntry>> {
                self.read_call($crate::store::sql::ledger::ledger_entries_of(
                    self, project, record_id,
                ))
                .await
            }

            async fn ledger_head(
                &self,
                project: &str,
            ) -> $crate::Result<Option<$crate::core::consent::ledger::LedgerHead>> {
                self.read_call($crate::store::sql::ledger::ledger_head(self, project))
                    .await
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
                    $crate::store::sql::ledger::erase_subject(&s, &project, &subject, &pseudonym)
                        .await
                })
                .await
            }
        }
    };
}

// The public methods every SQL store has beside the roles.
macro_rules! common_methods {
    ($store:ty) => {
        impl $store {
            /// The versions of the migrations not applied yet (none
            /// applied, none written; the rows `_sqlx_migrations` holds for
            /// Accord count as applied).
            pub async fn pending_migrations(&self) -> $crate::Result<Vec<i64>> {
                use $crate::store::sql::dialect::Dialect as _;
                self.read_call(async {
                    let mut conn = self
                        .pool()
                        .acquire()
                        .await
                        .map_err($crate::store::sql::db_error::<$store>)?;
                    $crate::store::sql::migrate::pending_versions::<$store>(
                        &mut conn,
                        Self::MIGRATOR,
                    )
                    .await
                })
                .await
            }

            /// The pool's connections now: (open, idle).
            pub fn pool_state(&self) -> (u32, u32) {
                use $crate::store::sql::dialect::Dialect as _;
                let pool = self.pool();
                (
                    pool.size(),
                    u32::try_from(pool.num_idle()).unwrap_or(u32::MAX),
                )
            }

            /// The value kept under `name` in the service's settings;
            /// `value` stored first if there is none (the first of several
            /// processes wins, the others read its value).
            pub async fn setting_or_insert(
                &self,
                name: &str,
                value: &str,
            ) -> $crate::Result<String> {
                let (name, value) = (name.to_owned(), value.to_owned());
                self.write_call(move |s| async move {
                    $crate::store::sql::settings::setting_or_insert(&s, &name, &value).await
                })
                .await
            }

            /// The value kept under `name`, if any.
            pub async fn setting(&self, name: &str) -> $crate::Result<Option<String>> {
                self.read_call($crate::store::sql::settings::setting(self, name))
                    .await
            }

            /// Closes every connection, waiting for them to finish
            /// (optional: a dropped store closes its connections too,
            /// without waiting).
            pub async fn close(&self) {
                use $crate::store::sql::dialect::Dialect as _;
                self.pool().close().await;
            }
        }
    };
}

pub(crate) use common_methods;
pub(crate) use store_calls;

use std::future::Future;
use std::time::Duration;

use crate::{Error, ErrorCode, Result};

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
        ErrorCode::StoreTimeout,
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
        ErrorCode::StoreTimeout,
        format!("the store did not answer within {} ms", limit.as_millis()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
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
