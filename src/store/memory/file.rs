//! Uploaded files in memory, by (project, SHA-256).

use std::collections::HashMap;

use super::{lock, MemoryStore};
use crate::core::consent::file::StoredFile;
use crate::store::FileStore;
use crate::Result;

/// The files, by (project, SHA-256).
pub(super) type Files = HashMap<(String, String), StoredFile>;

impl FileStore for MemoryStore {
    async fn put_file(&self, file: &StoredFile) -> Result<(StoredFile, bool)> {
        let mut files = lock(&self.files);
        let key = (file.project_id.clone(), file.sha256.clone());
        if let Some(stored) = files.get(&key) {
            return Ok((stored.clone(), false));
        }
        files.insert(key, file.clone());
        Ok((file.clone(), true))
    }

    async fn file(&self, project: &str, sha256: &str) -> Result<Option<StoredFile>> {
        let files = lock(&self.files);
        Ok(files.get(&(project.to_owned(), sha256.to_owned())).cloned())
    }

    async fn file_exists(&self, project: &str, sha256: &str) -> Result<bool> {
        let files = lock(&self.files);
        Ok(files.contains_key(&(project.to_owned(), sha256.to_owned())))
    }
}
