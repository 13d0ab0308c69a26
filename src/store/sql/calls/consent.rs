//! The consent roles of the SQL stores (a part of `store_calls!`, see
//! `calls.rs`): the content store, the consent records and their ledger,
//! the subjects' history and stored files.

/// Implements [`ContentStore`](crate::store::ContentStore),
/// [`ConsentLedger`](crate::store::ConsentLedger),
/// [`LedgerStore`](crate::store::LedgerStore),
/// [`HistoryStore`](crate::store::HistoryStore) and
/// [`FileStore`](crate::store::FileStore) for a SQL store type (writes
/// through `write_call`, reads through `read_call`); one role alone:
/// `consent_calls!(impl ContentStore for SqliteStore);`.
macro_rules! consent_calls {
    ($store:ty) => {
        $crate::store::sql::calls::consent::consent_calls!(impl ContentStore for $store);
        $crate::store::sql::calls::consent::consent_calls!(impl ConsentLedger for $store);
        $crate::store::sql::calls::consent::consent_calls!(impl LedgerStore for $store);
        $crate::store::sql::calls::consent::consent_calls!(impl HistoryStore for $store);
        $crate::store::sql::calls::consent::consent_calls!(impl FileStore for $store);
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

pub(crate) use consent_calls;
