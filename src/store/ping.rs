//! The readiness role: whether the backing database answers now.

/// Whether the backing database can take writes now: the readiness probe
/// of a server (`GET /readyz`).
pub trait Ping: Send + Sync {
    /// `Ok` when the store can serve requests, writes included, now; an
    /// [`Unavailable`](crate::ErrorKind::Unavailable) error otherwise.
    /// Cheap (a round trip, or taking and releasing a lock), bounded in
    /// time, and free of side effects.
    fn ping(&self) -> impl std::future::Future<Output = crate::Result<()>> + Send;

    /// The connection pool's state now, `(open, idle)`, for metrics; `None`
    /// for a store without a pool.
    fn pool_state(&self) -> Option<(u32, u32)> {
        None
    }
}

/// Readiness of SQLite: the write lock can be taken within a second (a
/// lock held elsewhere — another process, a stuck transaction — makes the
/// store not ready although it still answers reads). Any failure means
/// "not ready now" (`Unavailable`), never an internal error: a probe
/// answers 503 and the balancer routes elsewhere.
#[cfg(feature = "sqlite")]
impl crate::store::Ping for crate::store::sqlite::SqliteStore {
    async fn ping(&self) -> crate::Result<()> {
        self.check_writable().await.map_err(unavailable)
    }

    fn pool_state(&self) -> Option<(u32, u32)> {
        Some(crate::store::sqlite::SqliteStore::pool_state(self))
    }
}

/// Readiness of PostgreSQL: the database answers within the call timeout
/// and is not read-only.
#[cfg(feature = "postgres")]
impl crate::store::Ping for crate::store::postgres::PostgresStore {
    async fn ping(&self) -> crate::Result<()> {
        self.check_writable().await.map_err(unavailable)
    }

    fn pool_state(&self) -> Option<(u32, u32)> {
        Some(crate::store::postgres::PostgresStore::pool_state(self))
    }
}

/// Every failure of a probe as `Unavailable`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn unavailable(e: crate::Error) -> crate::Error {
    if e.kind() == crate::ErrorKind::Unavailable {
        e
    } else {
        crate::Error::unavailable(e)
    }
}
