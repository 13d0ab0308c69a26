//! The outbox role of the SQL stores (a part of `store_calls!`, see
//! `calls.rs`): webhook endpoints, outbox events and their deliveries.

/// Implements [`OutboxStore`](crate::store::OutboxStore) for a SQL store
/// type (writes through `write_call`, reads through `read_call`).
macro_rules! outbox_calls {
    ($store:ty) => {
        impl $crate::store::OutboxStore for $store {
            async fn insert_endpoint(
                &self,
                endpoint: &$crate::core::outbox::webhook::Endpoint,
                max: usize,
            ) -> $crate::Result<bool> {
                let endpoint = endpoint.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::outbox::insert_endpoint(&s, &endpoint, max).await
                })
                .await
            }

            async fn update_endpoint(
                &self,
                endpoint: &$crate::core::outbox::webhook::Endpoint,
            ) -> $crate::Result<bool> {
                let endpoint = endpoint.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::outbox::update_endpoint(&s, &endpoint).await
                })
                .await
            }

            async fn delete_endpoint(&self, project: &str, id: uuid::Uuid) -> $crate::Result<bool> {
                let project = project.to_owned();
                self.write_call(move |s| async move {
                    $crate::store::sql::outbox::delete_endpoint(&s, &project, id).await
                })
                .await
            }

            async fn endpoint(
                &self,
                project: &str,
                id: uuid::Uuid,
            ) -> $crate::Result<Option<$crate::core::outbox::webhook::Endpoint>> {
                self.read_call($crate::store::sql::outbox::endpoint(self, project, id))
                    .await
            }

            async fn endpoints(
                &self,
                project: &str,
            ) -> $crate::Result<Vec<$crate::core::outbox::webhook::Endpoint>> {
                self.read_call($crate::store::sql::outbox::endpoints(self, project))
                    .await
            }

            async fn outbox_events(
                &self,
                project: &str,
                after: Option<uuid::Uuid>,
                limit: u32,
            ) -> $crate::Result<Vec<$crate::core::outbox::OutboxEvent>> {
                self.read_call($crate::store::sql::outbox::outbox_events(
                    self, project, after, limit,
                ))
                .await
            }

            async fn claim_deliveries(
                &self,
                now: chrono::DateTime<chrono::Utc>,
                lease: std::time::Duration,
                limit: u32,
                project: Option<&str>,
            ) -> $crate::Result<Vec<$crate::core::outbox::webhook::Claimed>> {
                let project = project.map(str::to_owned);
                self.write_call(move |s| async move {
                    $crate::store::sql::outbox::claim_deliveries(
                        &s,
                        now,
                        lease,
                        limit,
                        project.as_deref(),
                    )
                    .await
                })
                .await
            }

            async fn finish_delivery(
                &self,
                claimed: &$crate::core::outbox::webhook::Delivery,
                attempt: &$crate::core::outbox::webhook::Attempt,
                next: $crate::core::outbox::webhook::Next,
            ) -> $crate::Result<bool> {
                let (claimed, attempt) = (claimed.clone(), attempt.clone());
                self.write_call(move |s| async move {
                    $crate::store::sql::outbox::finish_delivery(&s, &claimed, &attempt, next).await
                })
                .await
            }

            async fn deliveries(
                &self,
                project: &str,
                endpoint: uuid::Uuid,
                page: u32,
                size: u32,
            ) -> $crate::Result<$crate::store::Page<$crate::core::outbox::webhook::Delivery>> {
                self.read_call($crate::store::sql::outbox::deliveries(
                    self, project, endpoint, page, size,
                ))
                .await
            }

            async fn delivery(
                &self,
                project: &str,
                endpoint: uuid::Uuid,
                event: uuid::Uuid,
            ) -> $crate::Result<
                Option<(
                    $crate::core::outbox::webhook::Delivery,
                    Vec<$crate::core::outbox::webhook::Attempt>,
                )>,
            > {
                self.read_call($crate::store::sql::outbox::delivery(
                    self, project, endpoint, event,
                ))
                .await
            }

            async fn redeliver(
                &self,
                project: &str,
                endpoint: uuid::Uuid,
                event: uuid::Uuid,
                now: chrono::DateTime<chrono::Utc>,
            ) -> $crate::Result<Option<$crate::core::outbox::webhook::Delivery>> {
                let project = project.to_owned();
                self.write_call(move |s| async move {
                    $crate::store::sql::outbox::redeliver(&s, &project, endpoint, event, now).await
                })
                .await
            }
        }
    };
}
pub(crate) use outbox_calls;
