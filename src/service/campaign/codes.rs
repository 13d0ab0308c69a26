//! Code pools: generate, import, export, list and deactivate a campaign's
//! codes, and the code a redeem names.
//!
//! The codes themselves (alphabet, normalization, generation, CSV) are the
//! core's ([`crate::core::campaign::codes`]); a redeem's use of its code is
//! taken by the store in the redemption's own atomic step.

use std::sync::Arc;

use uuid::Uuid;

use super::{campaign_not_found, CampaignService};
use crate::core::campaign::codes::{
    csv_line, lookup_code, parse_csv, GenerateCodes, PromoCode, CSV_HEADER, MAX_GENERATE,
};
use crate::core::campaign::model::Campaign;
use crate::core::error::ErrorCode;
use crate::store::{
    check_page_size, CampaignStore, CodeBatch, CodeRefusal, CodeSource, CodeStore, Page, Progress,
    RedemptionStore,
};
use crate::{Error, Result};

/// Most codes one HTTP generate request makes (the command line and the
/// library go up to [`MAX_GENERATE`]): a request answers within seconds,
/// so a larger pool is generated in several requests.
pub const MAX_HTTP_GENERATE: u64 = 100_000;

/// Codes an export reads per store call.
const EXPORT_BATCH: u32 = 10_000;

/// A code with the campaign it unlocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeInfo {
    /// The code.
    pub code: PromoCode,
    /// The `refCode` of its campaign (`None` when the campaign was deleted).
    pub campaign_code: Option<String>,
}

/// An export of a campaign's codes under way (see
/// [`CampaignService::code_export`]).
#[derive(Debug, Clone)]
pub struct CodeExport {
    project: String,
    campaign_id: Uuid,
    /// The normalized form of the last code given.
    after: Option<String>,
    started: bool,
    done: bool,
    codes: u64,
}

impl CodeExport {
    /// The codes given so far.
    #[must_use]
    pub fn codes(&self) -> u64 {
        self.codes
    }
}

fn code_not_found(code: &str) -> Error {
    Error::new(
        ErrorCode::CodeNotFound,
        format!("no code {code:?} in this project"),
    )
}

/// The error of a redemption refused for its code.
pub(super) fn refused(why: &CodeRefusal) -> Error {
    match why {
        CodeRefusal::NotFound(code) => code_not_found(code),
        CodeRefusal::OtherCampaign(code) => Error::invalid_field(
            "code",
            ErrorCode::CodeNotForCampaign,
            format!("code {code:?} belongs to another campaign"),
        ),
        CodeRefusal::Inactive(code) => Error::new(
            ErrorCode::CodeInactive,
            format!("code {code:?} was deactivated"),
        ),
        CodeRefusal::Exhausted { code, limit } => Error::new(
            ErrorCode::CodeExhausted,
            format!("code {code:?} was used {limit} time(s), as many as it may be"),
        ),
        CodeRefusal::Required => Error::invalid_field(
            "code",
            ErrorCode::CodeRequired,
            "this campaign has a code pool: the redeem needs one of its codes",
        ),
    }
}

/// A random, secret seed for a code generator.
fn seed() -> [u8; 32] {
    // Two version-4 UUIDs carry 244 bits from the operating system's
    // random source; SHA-256 spreads them over the seed.
    use sha2::{Digest, Sha256};
    Sha256::new()
        .chain_update(Uuid::new_v4().as_bytes())
        .chain_update(Uuid::new_v4().as_bytes())
        .finalize()
        .into()
}

impl<S: CampaignStore + RedemptionStore> CampaignService<S> {
    /// The campaign a normalized code belongs to.
    pub(super) async fn campaign_of_code(&self, project: &str, code: &str) -> Result<Campaign> {
        let found = self
            .store
            .code(project, code)
            .await?
            .ok_or_else(|| code_not_found(code))?;
        self.store
            .campaign(project, found.campaign_id)
            .await?
            .ok_or_else(|| {
                campaign_not_found(format_args!("{} (of code {code:?})", found.campaign_id))
            })
    }

    /// A code (any case, spaces and dashes aside) and the campaign it
    /// unlocks.
    pub async fn code_info(&self, project: &str, code: &str) -> Result<CodeInfo> {
        crate::core::limits::check_project_id(project)?;
        let normalized = lookup_code("code", code).map_err(|e| Error::validation(vec![e]))?;
        let found = self
            .store
            .code(project, &normalized)
            .await?
            .ok_or_else(|| code_not_found(&normalized))?;
        let campaign = self.store.campaign(project, found.campaign_id).await?;
        Ok(CodeInfo {
            code: found,
            campaign_code: campaign.map(|c| c.ref_code),
        })
    }
}

impl<S: CampaignStore + RedemptionStore + CodeStore> CampaignService<S> {
    async fn pool_campaign(&self, project: &str, campaign_id: Uuid) -> Result<Campaign> {
        crate::core::limits::check_project_id(project)?;
        self.store
            .campaign(project, campaign_id)
            .await?
            .ok_or_else(|| campaign_not_found(campaign_id))
    }

    /// Generates codes into a campaign's pool, all or none, at most `max`
    /// (the HTTP route passes [`MAX_HTTP_GENERATE`]; at most
    /// [`MAX_GENERATE`] in any case). `progress` hears how many are stored
    /// so far. The number stored.
    pub async fn generate_codes(
        &self,
        project: &str,
        campaign_id: Uuid,
        request: &GenerateCodes,
        max: u64,
        progress: Option<Arc<dyn Fn(u64) + Send + Sync>>,
    ) -> Result<u64> {
        let plan = request.plan(seed(), max.min(MAX_GENERATE))?;
        let campaign = self.pool_campaign(project, campaign_id).await?;
        self.store
            .insert_codes(&CodeBatch {
                project_id: project.to_owned(),
                campaign_id: campaign.id,
                created_date: self.clock.now(),
                source: CodeSource::Generated(plan),
                progress: progress.map(Progress),
            })
            .await
    }

    /// Imports codes from CSV text (see
    /// [`parse_csv`](crate::core::campaign::codes::parse_csv)) into a
    /// campaign's pool, all or none; `usage_limit` is the limit of rows
    /// without their own (`None`: 1). The number stored.
    pub async fn import_codes(
        &self,
        project: &str,
        campaign_id: Uuid,
        csv: &str,
        usage_limit: Option<i64>,
        progress: Option<Arc<dyn Fn(u64) + Send + Sync>>,
    ) -> Result<u64> {
        let limit = crate::core::campaign::codes::check_usage_limit("usageLimit", usage_limit)
            .map_err(|e| Error::validation(vec![e]))?;
        let codes = parse_csv(csv, limit)?;
        let campaign = self.pool_campaign(project, campaign_id).await?;
        self.store
            .insert_codes(&CodeBatch {
                project_id: project.to_owned(),
                campaign_id: campaign.id,
                created_date: self.clock.now(),
                source: CodeSource::Imported(codes),
                progress: progress.map(Progress),
            })
            .await
    }

    /// A page of a campaign's codes with their usage, in normalized order.
    pub async fn list_codes(
        &self,
        project: &str,
        campaign_id: Uuid,
        page: u32,
        size: u32,
    ) -> Result<Page<PromoCode>> {
        check_page_size(size)?;
        let campaign = self.pool_campaign(project, campaign_id).await?;
        self.store
            .list_codes(project, campaign.id, page, size)
            .await
    }

    /// Writes a campaign's codes as CSV ([`CSV_HEADER`], then one line a
    /// code in normalized order) to `out`, a batch of lines at a time; the
    /// number of codes.
    pub async fn export_codes(
        &self,
        project: &str,
        campaign_id: Uuid,
        mut out: impl FnMut(String) -> Result<()>,
    ) -> Result<u64> {
        let mut export = self.code_export(project, campaign_id).await?;
        while let Some(chunk) = self.next_codes_csv(&mut export).await? {
            out(chunk)?;
        }
        Ok(export.codes)
    }

    /// Starts an export of a campaign's codes as CSV (`campaign_not_found`
    /// now rather than later); [`next_codes_csv`](Self::next_codes_csv)
    /// walks it, so that a caller holds one batch of lines at a time.
    pub async fn code_export(&self, project: &str, campaign_id: Uuid) -> Result<CodeExport> {
        let campaign = self.pool_campaign(project, campaign_id).await?;
        Ok(CodeExport {
            project: project.to_owned(),
            campaign_id: campaign.id,
            after: None,
            started: false,
            done: false,
            codes: 0,
        })
    }

    /// The next piece of an export's CSV: the header, then the lines of
    /// up to 10,000 codes per store call; `None` once every code was
    /// given.
    pub async fn next_codes_csv(&self, export: &mut CodeExport) -> Result<Option<String>> {
        if !export.started {
            export.started = true;
            return Ok(Some(format!("{CSV_HEADER}\n")));
        }
        if export.done {
            return Ok(None);
        }
        let batch = self
            .store
            .codes_after(
                &export.project,
                export.campaign_id,
                export.after.as_deref(),
                EXPORT_BATCH,
            )
            .await?;
        export.done = batch.len() < EXPORT_BATCH as usize;
        let Some(last) = batch.last() else {
            return Ok(None);
        };
        export.after = Some(last.normalized());
        export.codes += batch.len() as u64;
        Ok(Some(batch.iter().map(csv_line).collect()))
    }

    /// Activates or deactivates one code of a campaign (any case, spaces
    /// and dashes aside). A deactivated code is refused by redeem; its
    /// past redemptions stand.
    pub async fn set_code_active(
        &self,
        project: &str,
        campaign_id: Uuid,
        code: &str,
        active: bool,
    ) -> Result<PromoCode> {
        let normalized = lookup_code("code", code).map_err(|e| Error::validation(vec![e]))?;
        let campaign = self.pool_campaign(project, campaign_id).await?;
        self.store
            .set_code_active(project, campaign.id, &normalized, active)
            .await?
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::CodeNotFound,
                    format!("campaign {campaign_id} has no code {normalized:?}"),
                )
            })
    }
}
