//! The campaign roles of the SQL stores (a part of `store_calls!`, see
//! `calls.rs`): campaigns, redemptions and code pools.

/// Implements [`CampaignStore`](crate::store::CampaignStore),
/// [`RedemptionStore`](crate::store::RedemptionStore) and
/// [`CodeStore`](crate::store::CodeStore) for a SQL store type (writes
/// through `write_call`, reads through `read_call`); one role alone:
/// `campaign_calls!(impl CampaignStore for SqliteStore);`.
macro_rules! campaign_calls {
    ($store:ty) => {
        $crate::store::sql::calls::campaign::campaign_calls!(impl CampaignStore for $store);
        $crate::store::sql::calls::campaign::campaign_calls!(impl RedemptionStore for $store);
        $crate::store::sql::calls::campaign::campaign_calls!(impl CodeStore for $store);
    };

    (impl CampaignStore for $store:ty) => {
        impl $crate::store::CampaignStore for $store {
            async fn insert_campaign_within(
                &self,
                campaign: &$crate::core::campaign::Campaign,
                max: u64,
            ) -> $crate::Result<()> {
                let campaign = campaign.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::campaign::insert_campaign_within(&s, &campaign, max).await
                })
                .await
            }

            async fn update_campaign(
                &self,
                campaign: &$crate::core::campaign::Campaign,
                expected_version: i64,
            ) -> $crate::Result<()> {
                let campaign = campaign.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::campaign::update_campaign(&s, &campaign, expected_version)
                        .await
                })
                .await
            }

            async fn delete_campaign(&self, project: &str, id: uuid::Uuid) -> $crate::Result<bool> {
                let project = project.to_owned();
                self.write_call(move |s| async move {
                    $crate::store::sql::campaign::delete_campaign(&s, &project, id).await
                })
                .await
            }

            async fn campaign(
                &self,
                project: &str,
                id: uuid::Uuid,
            ) -> $crate::Result<Option<$crate::core::campaign::Campaign>> {
                self.read_call($crate::store::sql::campaign::campaign(self, project, id))
                    .await
            }

            async fn campaign_by_code(
                &self,
                project: &str,
                ref_code: &str,
            ) -> $crate::Result<Option<$crate::core::campaign::Campaign>> {
                self.read_call($crate::store::sql::campaign::campaign_by_code(
                    self, project, ref_code,
                ))
                .await
            }

            async fn campaigns_by_code(
                &self,
                project: &str,
                ref_codes: &[&str],
            ) -> $crate::Result<Vec<$crate::store::NamedCampaign>> {
                self.read_call($crate::store::sql::campaign::campaigns_by_code(
                    self, project, ref_codes,
                ))
                .await
            }

            async fn list_campaigns(
                &self,
                project: &str,
                query: &$crate::store::CampaignQuery,
            ) -> $crate::Result<$crate::store::Page<$crate::core::campaign::Campaign>> {
                self.read_call($crate::store::sql::campaign::list_campaigns(
                    self, project, query,
                ))
                .await
            }

            async fn all_campaigns(
                &self,
                project: &str,
            ) -> $crate::Result<Vec<$crate::core::campaign::Campaign>> {
                self.read_call($crate::store::sql::campaign::all_campaigns(self, project))
                    .await
            }

            async fn catalog_version(&self, project: &str) -> $crate::Result<i64> {
                self.read_call($crate::store::sql::campaign::catalog_version(self, project))
                    .await
            }

            async fn count_campaigns(&self, project: &str) -> $crate::Result<u64> {
                self.read_call($crate::store::sql::campaign::count_campaigns(self, project))
                    .await
            }

            async fn campaign_revisions(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
                page: u32,
                size: u32,
            ) -> $crate::Result<
                $crate::store::Page<$crate::core::campaign::CampaignRevision>,
            > {
                self.read_call($crate::store::sql::revision::campaign_revisions(
                    self,
                    project,
                    campaign_id,
                    page,
                    size,
                ))
                .await
            }

            async fn campaign_revision(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
                revision: i64,
            ) -> $crate::Result<Option<$crate::core::campaign::CampaignRevision>> {
                self.read_call($crate::store::sql::revision::campaign_revision(
                    self,
                    project,
                    campaign_id,
                    revision,
                ))
                .await
            }
        }
    };

    (impl RedemptionStore for $store:ty) => {
        impl $crate::store::RedemptionStore for $store {
            async fn redeem(
                &self,
                plan: &$crate::store::RedemptionPlan,
            ) -> $crate::Result<$crate::store::RedeemOutcome> {
                let plan = plan.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::group::redeem(&s, plan).await
                })
                .await
            }

            async fn code(
                &self,
                project: &str,
                normalized: &str,
            ) -> $crate::Result<Option<$crate::core::campaign::codes::PromoCode>> {
                self.read_call($crate::store::sql::codes::code(self, project, normalized))
                    .await
            }

            async fn cancel_redemption(
                &self,
                project: &str,
                id: uuid::Uuid,
                at: chrono::DateTime<chrono::Utc>,
            ) -> $crate::Result<Option<$crate::core::campaign::Redemption>> {
                let project = project.to_owned();
                self.write_call(move |s| async move {
                    $crate::store::sql::redemption::cancel_redemption(&s, &project, id, at).await
                })
                .await
            }

            async fn redemption_by_key(
                &self,
                project: &str,
                idempotency_key: &str,
            ) -> $crate::Result<Option<$crate::core::campaign::Redemption>> {
                self.read_call($crate::store::sql::redemption::redemption_by_key(
                    self,
                    project,
                    idempotency_key,
                ))
                .await
            }

            async fn redemption(
                &self,
                project: &str,
                id: uuid::Uuid,
            ) -> $crate::Result<Option<$crate::core::campaign::Redemption>> {
                self.read_call($crate::store::sql::redemption::redemption(
                    self, project, id,
                ))
                .await
            }

            async fn list_redemptions(
                &self,
                project: &str,
                query: &$crate::store::RedemptionQuery,
            ) -> $crate::Result<$crate::store::Page<$crate::core::campaign::Redemption>> {
                self.read_call($crate::store::sql::redemption::list_redemptions(
                    self, project, query,
                ))
                .await
            }

            async fn quota_usage(
                &self,
                project: &str,
                keys: &[String],
            ) -> $crate::Result<std::collections::HashMap<String, rust_decimal::Decimal>> {
                self.read_call($crate::store::sql::redemption::quota_usage(
                    self, project, keys,
                ))
                .await
            }

            async fn counter_usage(
                &self,
                project: &str,
                counters: &[$crate::store::Counter],
                at: chrono::DateTime<chrono::Utc>,
            ) -> $crate::Result<Vec<$crate::store::CounterUsage>> {
                self.read_call($crate::store::sql::redemption::counter_usage(
                    self, project, counters, at,
                ))
                .await
            }

            async fn charged_keys(
                &self,
                project: &str,
                after: Option<i64>,
            ) -> $crate::Result<$crate::store::ChargedKeys> {
                self.read_call($crate::store::sql::redemption::charged_keys(
                    self, project, after,
                ))
                .await
            }

            async fn quota_usage_by_prefix(
                &self,
                project: &str,
                prefix: &str,
                after: Option<&str>,
                limit: u32,
            ) -> $crate::Result<Vec<(String, rust_decimal::Decimal)>> {
                self.read_call($crate::store::sql::redemption::quota_usage_by_prefix(
                    self, project, prefix, after, limit,
                ))
                .await
            }

            async fn campaign_quota_usage(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
            ) -> $crate::Result<Vec<$crate::core::campaign::QuotaUsage>> {
                self.read_call($crate::store::sql::redemption::campaign_quota_usage(
                    self,
                    project,
                    campaign_id,
                ))
                .await
            }
        }
    };

    (impl CodeStore for $store:ty) => {
        impl $crate::store::CodeStore for $store {
            async fn insert_codes(&self, batch: &$crate::store::CodeBatch) -> $crate::Result<u64> {
                let batch = batch.clone();
                self.write_call(move |s| async move {
                    $crate::store::sql::codes::insert_codes(&s, &batch).await
                })
                .await
            }

            async fn list_codes(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
                page: u32,
                size: u32,
            ) -> $crate::Result<$crate::store::Page<$crate::core::campaign::codes::PromoCode>> {
                self.read_call($crate::store::sql::codes::list_codes(
                    self,
                    project,
                    campaign_id,
                    page,
                    size,
                ))
                .await
            }

            async fn codes_after(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
                after: Option<&str>,
                limit: u32,
            ) -> $crate::Result<Vec<$crate::core::campaign::codes::PromoCode>> {
                self.read_call($crate::store::sql::codes::codes_after(
                    self,
                    project,
                    campaign_id,
                    after,
                    limit,
                ))
                .await
            }

            async fn set_code_active(
                &self,
                project: &str,
                campaign_id: uuid::Uuid,
                normalized: &str,
                active: bool,
            ) -> $crate::Result<Option<$crate::core::campaign::codes::PromoCode>> {
                let project = project.to_owned();
                let normalized = normalized.to_owned();
                self.write_call(move |s| async move {
                    $crate::store::sql::codes::set_code_active(
                        &s,
                        &project,
                        campaign_id,
                        &normalized,
                        active,
                    )
                    .await
                })
                .await
            }
        }
    };
}

pub(crate) use campaign_calls;
