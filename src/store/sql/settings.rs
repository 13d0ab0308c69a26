//! The service's settings (`accord_settings`: name → value), for every SQL
//! dialect: values a deployment keeps across restarts and shares between
//! processes.

use super::dialect::{acquire, execute, retry, row, Abort, Conn, Dialect};
use super::query::{Sql, SqlRow};
use crate::Result;

async fn value<D: Dialect>(conn: &mut Conn<D>, name: &str) -> Result<Option<String>, Abort> {
    let sql = Sql::new("SELECT value FROM accord_settings WHERE name = $1").bind(name);
    match row::<D>(conn, &sql).await? {
        Some(row) => Ok(Some(row.col("value")?)),
        None => Ok(None),
    }
}

/// The value kept under `name`; `value` stored first if there is none
/// (the first of several processes wins, the others read its value).
pub(crate) async fn setting_or_insert<D: Dialect>(
    db: &D,
    name: &str,
    value: &str,
) -> Result<String> {
    retry::<D, _, _, _>(|| async {
        let mut tx = db.begin_write().await?;
        let sql = Sql::new(
            "INSERT INTO accord_settings (name, value) VALUES ($1, $2) \
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(value);
        execute::<D>(tx.conn(), &sql).await?;
        let kept = self::value::<D>(tx.conn(), name).await?;
        tx.commit().await?;
        kept.ok_or_else(|| Abort::Fail(crate::Error::internal("a stored setting vanished")))
    })
    .await
}

/// The value kept under `name`, if any.
pub(crate) async fn setting<D: Dialect>(db: &D, name: &str) -> Result<Option<String>> {
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        value::<D>(&mut conn, name).await
    })
    .await
}
