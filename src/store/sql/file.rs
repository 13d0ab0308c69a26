//! Uploaded files (`accord_file`, see `migrations/*/0120_files.sql`), for
//! every SQL dialect: one row per (project, SHA-256), inserted once.

use super::dialect::{acquire, execute, retry, row, Abort, Conn, Dialect};
use super::query::{Sql, SqlRow};
use crate::core::consent::file::StoredFile;
use crate::Result;

fn read(row: &impl SqlRow, project: &str, sha256: &str) -> Result<StoredFile> {
    Ok(StoredFile {
        project_id: project.to_owned(),
        sha256: sha256.to_owned(),
        content_type: row.col("content_type")?,
        bytes: row.col("bytes")?,
        created_by: row.col("created_by")?,
        created_date: row.col("created_date")?,
    })
}

fn select(project: &str, sha256: &str) -> Sql {
    Sql::new(
        "SELECT content_type, bytes, created_by, created_date FROM accord_file \
         WHERE project_id = $1 AND sha256 = $2",
    )
    .bind(project)
    .bind(sha256)
}

async fn stored<D: Dialect>(
    conn: &mut Conn<D>,
    project: &str,
    sha256: &str,
) -> Result<Option<StoredFile>, Abort> {
    match row::<D>(conn, &select(project, sha256)).await? {
        Some(r) => Ok(Some(read(&r, project, sha256)?)),
        None => Ok(None),
    }
}

/// [`FileStore::put_file`](crate::store::FileStore::put_file).
pub(crate) async fn put_file<D: Dialect>(db: &D, file: &StoredFile) -> Result<(StoredFile, bool)> {
    retry::<D, _, _, _>(|| async {
        let mut tx = db.begin_write().await?;
        let insert = Sql::new(
            "INSERT INTO accord_file \
             (project_id, sha256, content_type, size, bytes, created_by, created_date) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (project_id, sha256) DO NOTHING",
        )
        .bind(&file.project_id)
        .bind(&file.sha256)
        .bind(&file.content_type)
        .bind(i64::try_from(file.bytes.len()).unwrap_or(i64::MAX))
        .bind(file.bytes.as_slice())
        .bind(&file.created_by)
        .bind(file.created_date);
        let created = execute::<D>(tx.conn(), &insert).await? == 1;
        let kept = if created {
            Some(file.clone())
        } else {
            stored::<D>(tx.conn(), &file.project_id, &file.sha256).await?
        };
        tx.commit().await?;
        kept.map(|f| (f, created))
            .ok_or_else(|| Abort::Fail(crate::Error::internal("a stored file vanished")))
    })
    .await
}

/// [`FileStore::file`](crate::store::FileStore::file).
pub(crate) async fn file<D: Dialect>(
    db: &D,
    project: &str,
    sha256: &str,
) -> Result<Option<StoredFile>> {
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        stored::<D>(&mut conn, project, sha256).await
    })
    .await
}

/// [`FileStore::file_exists`](crate::store::FileStore::file_exists).
pub(crate) async fn file_exists<D: Dialect>(db: &D, project: &str, sha256: &str) -> Result<bool> {
    let sql = Sql::new("SELECT 1 AS found FROM accord_file WHERE project_id = $1 AND sha256 = $2")
        .bind(project)
        .bind(sha256);
    retry::<D, _, _, _>(|| async {
        let mut conn = acquire(db).await?;
        Ok(row::<D>(&mut conn, &sql).await?.is_some())
    })
    .await
}
