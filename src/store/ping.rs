//! The readiness role: whether the backing database answers now.

/// Whether the backing database answers now: the readiness probe of a
/// server (`GET /readyz`).
pub trait Ping: Send + Sync {
    /// `Ok` when the store can serve requests now; an
    /// [`Unavailable`](crate::ErrorKind::Unavailable) error otherwise. Cheap
    /// (one round trip at most) and free of side effects.
    fn ping(&self) -> impl std::future::Future<Output = crate::Result<()>> + Send;
}

/// The readiness probe of the SQL stores: one `SELECT 1` on a pooled
/// connection. Any failure means "not ready now" (`Unavailable`), never an
/// internal error: a probe answers 503 and the balancer routes elsewhere.
#[cfg(feature = "sqlite")]
impl crate::store::Ping for crate::store::sqlite::SqliteStore {
    async fn ping(&self) -> crate::Result<()> {
        sqlx::query("SELECT 1")
            .execute(self.pool())
            .await
            .map(|_| ())
            .map_err(crate::Error::unavailable)
    }
}

#[cfg(feature = "postgres")]
impl crate::store::Ping for crate::store::postgres::PostgresStore {
    async fn ping(&self) -> crate::Result<()> {
        sqlx::query("SELECT 1")
            .execute(self.pool())
            .await
            .map(|_| ())
            .map_err(crate::Error::unavailable)
    }
}
