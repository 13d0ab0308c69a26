//! Uploaded files: the screens consents show (`formScreen`), and the
//! checks that a `formScreen` names a file of the project.

use serde_json::{Map, Value};

use super::ConsentService;
use crate::core::consent::file::{self, FileInfo, StoredFile};
use crate::core::error::{ErrorCode, Problems};
use crate::store::ConsentStore;
use crate::{Error, Result};

impl<S: ConsentStore> ConsentService<S> {
    /// Stores an uploaded file under the SHA-256 of its bytes, after
    /// [`file::check_upload`] (type sniffed from the bytes, size bound).
    /// Uploading the same bytes again stores nothing and answers the first
    /// upload; the flag says whether this call stored it.
    pub async fn upload_file(
        &self,
        project: &str,
        content_type: Option<&str>,
        bytes: Vec<u8>,
        actor: &str,
    ) -> Result<(FileInfo, bool)> {
        crate::core::limits::check_project_id(project)?;
        let kind = file::check_upload(content_type, &bytes)?;
        let stored = StoredFile {
            project_id: project.to_owned(),
            sha256: crate::core::hash::sha256_hex(&bytes),
            content_type: kind.mime().to_owned(),
            bytes,
            created_by: actor.to_owned(),
            created_date: self.clock.now(),
        };
        let (kept, created) = self.store.put_file(&stored).await?;
        Ok((kept.info(), created))
    }

    /// The file of the project with this SHA-256: 404 `file_not_found`
    /// (also for a text that is not a SHA-256).
    pub async fn file(&self, project: &str, sha256: &str) -> Result<StoredFile> {
        let found = if file::is_sha256(sha256) {
            self.store.file(project, sha256).await?
        } else {
            None
        };
        found.ok_or_else(|| {
            Error::new(
                ErrorCode::FileNotFound,
                "no file with this SHA-256 was uploaded to the project",
            )
        })
    }

    /// Whether `sha256` names a file of the project.
    pub(super) async fn is_project_file(&self, project: &str, sha256: &str) -> Result<bool> {
        Ok(file::is_sha256(sha256) && self.store.file_exists(project, sha256).await?)
    }

    /// A `formScreen` that is a string must name a file of the project
    /// (422 `unknown_file` at `field`). Other JSON values (records written
    /// before files could be uploaded) are left as they are.
    pub(super) async fn check_form_screen(
        &self,
        project: &str,
        data: &Map<String, Value>,
        field: &str,
        problems: &mut Problems,
    ) -> Result<()> {
        if let Some(Value::String(sha256)) = data.get("formScreen") {
            if !self.is_project_file(project, sha256).await? {
                problems.push(field, ErrorCode::UnknownFile, unknown_file(sha256));
            }
        }
        Ok(())
    }

    /// The screen a new acceptance pins: the one the application names
    /// (`sent`, which must be a file of the project: 422 `unknown_file` at
    /// `field`), else the consent's `formScreen` when it names a file.
    pub(super) async fn pinned_screen(
        &self,
        project: &str,
        sent: Option<&str>,
        consent: &Map<String, Value>,
        field: &str,
    ) -> Result<Option<String>> {
        match sent {
            Some(sha256) => {
                if self.is_project_file(project, sha256).await? {
                    Ok(Some(sha256.to_owned()))
                } else {
                    Err(Error::invalid_field(
                        field,
                        ErrorCode::UnknownFile,
                        unknown_file(sha256),
                    ))
                }
            }
            None => Ok(consent
                .get("formScreen")
                .and_then(Value::as_str)
                .filter(|s| file::is_sha256(s))
                .map(str::to_owned)),
        }
    }
}

fn unknown_file(sha256: &str) -> String {
    let shown: String = sha256.chars().take(80).collect();
    format!("{shown:?} is not the SHA-256 of a file uploaded to this project (POST /cms/api/projects/{{projId}}/files)")
}
