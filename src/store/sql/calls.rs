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
/// `write_call` (see the module docs): `store_calls!(SqliteStore);`. The
/// roles are in `calls/campaign.rs`, `calls/consent.rs`, `calls/outbox.rs`
/// and `hold.rs`.
macro_rules! store_calls {
    ($store:ty) => {
        $crate::store::sql::calls::campaign::campaign_calls!($store);
        $crate::store::sql::calls::consent::consent_calls!($store);
        $crate::store::sql::hold::hold_calls!($store);
        $crate::store::sql::calls::outbox::outbox_calls!($store);
        $crate::store::sql::calls::common_methods!($store);
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

pub(crate) mod campaign;
pub(crate) mod consent;
pub(crate) mod outbox;

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
