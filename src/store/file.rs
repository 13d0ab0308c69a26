//! Uploaded files ([`crate::core::consent::file`]): content-addressed by
//! the SHA-256 of their bytes, per project, in the store itself (no file
//! system), never changed once stored.

use std::future::Future;

use crate::core::consent::file::StoredFile;
use crate::Result;

/// The files of the projects.
pub trait FileStore: Send + Sync {
    /// Stores `file` under (project, sha256) unless a file is already
    /// there; returns the stored file (the first upload's, when it was
    /// already there) and whether this call stored it. The caller has
    /// computed `sha256` from the bytes.
    fn put_file(
        &self,
        file: &StoredFile,
    ) -> impl Future<Output = Result<(StoredFile, bool)>> + Send;

    /// The file of the project with this SHA-256.
    fn file(
        &self,
        project: &str,
        sha256: &str,
    ) -> impl Future<Output = Result<Option<StoredFile>>> + Send;

    /// Whether the project has a file with this SHA-256 (without reading
    /// its bytes).
    fn file_exists(&self, project: &str, sha256: &str)
        -> impl Future<Output = Result<bool>> + Send;
}
