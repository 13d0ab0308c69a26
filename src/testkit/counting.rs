//! A memory store that counts the reads search makes, and can hold the
//! campaign load for a while (tests of the snapshot and usage caches).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use crate::core::campaign::{Campaign, QuotaUsage, Redemption};
use crate::store::memory::MemoryStore;
use crate::store::{
    CampaignQuery, CampaignStore, Page, RedeemOutcome, RedemptionPlan, RedemptionQuery,
    RedemptionStore,
};
use crate::Result;

#[derive(Debug, Default)]
pub(crate) struct Counting {
    pub(crate) inner: MemoryStore,
    pub(crate) all_campaigns: AtomicUsize,
    pub(crate) catalog_version: AtomicUsize,
    pub(crate) quota_usage: AtomicUsize,
    pub(crate) charged_keys: AtomicUsize,
    /// Milliseconds every `all_campaigns` waits before answering.
    pub(crate) load_delay_ms: AtomicU64,
    /// `all_campaigns` fails (after its delay): the database is down.
    pub(crate) loads_fail: AtomicBool,
}

impl Counting {
    pub(crate) fn count(counter: &AtomicUsize) -> usize {
        counter.load(Ordering::SeqCst)
    }
}

impl CampaignStore for Counting {
    async fn insert_campaign_within(&self, campaign: &Campaign, max: u64) -> Result<()> {
        self.inner.insert_campaign_within(campaign, max).await
    }
    async fn update_campaign(&self, campaign: &Campaign, expected_version: i64) -> Result<()> {
        self.inner.update_campaign(campaign, expected_version).await
    }
    async fn delete_campaign(&self, project: &str, id: Uuid) -> Result<bool> {
        self.inner.delete_campaign(project, id).await
    }
    async fn campaign_revisions(
        &self,
        project: &str,
        campaign_id: Uuid,
        page: u32,
        size: u32,
    ) -> Result<Page<crate::core::campaign::CampaignRevision>> {
        self.inner
            .campaign_revisions(project, campaign_id, page, size)
            .await
    }
    async fn campaign_revision(
        &self,
        project: &str,
        campaign_id: Uuid,
        revision: i64,
    ) -> Result<Option<crate::core::campaign::CampaignRevision>> {
        self.inner
            .campaign_revision(project, campaign_id, revision)
            .await
    }
    async fn campaign(&self, project: &str, id: Uuid) -> Result<Option<Campaign>> {
        self.inner.campaign(project, id).await
    }
    async fn campaign_by_code(&self, project: &str, ref_code: &str) -> Result<Option<Campaign>> {
        self.inner.campaign_by_code(project, ref_code).await
    }
    async fn campaigns_by_code(
        &self,
        project: &str,
        ref_codes: &[&str],
    ) -> Result<Vec<crate::store::NamedCampaign>> {
        self.inner.campaigns_by_code(project, ref_codes).await
    }
    async fn list_campaigns(&self, project: &str, query: &CampaignQuery) -> Result<Page<Campaign>> {
        self.inner.list_campaigns(project, query).await
    }
    async fn all_campaigns(&self, project: &str) -> Result<Vec<Campaign>> {
        self.all_campaigns.fetch_add(1, Ordering::SeqCst);
        // Read now, answer later: a slow database.
        let campaigns = self.inner.all_campaigns(project).await;
        let delay = self.load_delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        if self.loads_fail.load(Ordering::SeqCst) {
            return Err(crate::Error::unavailable("the database is down"));
        }
        campaigns
    }
    async fn catalog_version(&self, project: &str) -> Result<i64> {
        self.catalog_version.fetch_add(1, Ordering::SeqCst);
        self.inner.catalog_version(project).await
    }
    async fn count_campaigns(&self, project: &str) -> Result<u64> {
        self.inner.count_campaigns(project).await
    }
}

impl RedemptionStore for Counting {
    async fn code(
        &self,
        project: &str,
        normalized: &str,
    ) -> Result<Option<crate::core::campaign::codes::PromoCode>> {
        self.inner.code(project, normalized).await
    }
    async fn redeem(&self, plan: &RedemptionPlan) -> Result<RedeemOutcome> {
        self.inner.redeem(plan).await
    }
    async fn cancel_redemption(
        &self,
        project: &str,
        id: Uuid,
        at: DateTime<Utc>,
    ) -> Result<Option<Redemption>> {
        self.inner.cancel_redemption(project, id, at).await
    }
    async fn redemption_by_key(&self, project: &str, key: &str) -> Result<Option<Redemption>> {
        self.inner.redemption_by_key(project, key).await
    }
    async fn redemption(&self, project: &str, id: Uuid) -> Result<Option<Redemption>> {
        self.inner.redemption(project, id).await
    }
    async fn list_redemptions(
        &self,
        project: &str,
        query: &RedemptionQuery,
    ) -> Result<Page<Redemption>> {
        self.inner.list_redemptions(project, query).await
    }
    async fn quota_usage(
        &self,
        project: &str,
        keys: &[String],
    ) -> Result<HashMap<String, Decimal>> {
        self.quota_usage.fetch_add(1, Ordering::SeqCst);
        self.inner.quota_usage(project, keys).await
    }
    async fn counter_usage(
        &self,
        project: &str,
        counters: &[crate::store::Counter],
        at: DateTime<Utc>,
    ) -> Result<Vec<crate::store::CounterUsage>> {
        self.quota_usage.fetch_add(1, Ordering::SeqCst);
        self.inner.counter_usage(project, counters, at).await
    }
    async fn charged_keys(
        &self,
        project: &str,
        after: Option<i64>,
    ) -> Result<crate::store::ChargedKeys> {
        self.charged_keys.fetch_add(1, Ordering::SeqCst);
        self.inner.charged_keys(project, after).await
    }
    async fn quota_usage_by_prefix(
        &self,
        project: &str,
        prefix: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<(String, Decimal)>> {
        self.inner
            .quota_usage_by_prefix(project, prefix, after, limit)
            .await
    }
    async fn campaign_quota_usage(&self, project: &str, id: Uuid) -> Result<Vec<QuotaUsage>> {
        self.inner.campaign_quota_usage(project, id).await
    }
}
