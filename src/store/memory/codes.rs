//! Code pools in memory: the reference model of `store/sql/codes.rs`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{lock, MemoryStore};
use crate::core::campaign::codes::{normalize, CodeGenerator, PromoCode};
use crate::core::error::ErrorCode;
use crate::store::{CodeBatch, CodeRefusal, CodeSource, CodeStore, Page, Progress};
use crate::{Error, FieldError, Result};

/// Every project's codes. Lives beside the redemptions (one lock), since a
/// redemption takes a use of its code in the same step.
#[derive(Debug, Default)]
pub(super) struct Pools {
    /// Codes by (project, normalized code).
    codes: HashMap<(String, String), PromoCode>,
    /// The normalized codes of each campaign, in order.
    by_campaign: HashMap<(String, Uuid), BTreeSet<String>>,
    /// The holds whose code use `used` counts, by (project, hold id): the
    /// code and the hold's expiry (the SQL stores' `quota_hold.code_held`).
    held: HashMap<(String, Uuid), (String, DateTime<Utc>)>,
}

impl Pools {
    pub(super) fn get(&self, project: &str, normalized: &str) -> Option<&PromoCode> {
        self.codes.get(&(project.to_owned(), normalized.to_owned()))
    }

    fn insert(&mut self, project: &str, normalized: String, code: PromoCode) {
        self.by_campaign
            .entry((project.to_owned(), code.campaign_id))
            .or_default()
            .insert(normalized.clone());
        self.codes.insert((project.to_owned(), normalized), code);
    }

    fn taken(&self, project: &str, normalized: &str) -> bool {
        self.codes
            .contains_key(&(project.to_owned(), normalized.to_owned()))
    }

    /// Whether a campaign owns a code pool.
    pub(super) fn has_pool(&self, project: &str, campaign_id: Uuid) -> bool {
        self.by_campaign
            .get(&(project.to_owned(), campaign_id))
            .is_some_and(|set| !set.is_empty())
    }

    /// Checks that a redemption or hold of `campaign_id` may take a use of
    /// `code` at `at` (giving back the uses of holds of the code expired
    /// then, when it has none left); `None` when it may.
    pub(super) fn check(
        &mut self,
        project: &str,
        campaign_id: Uuid,
        code: &str,
        at: DateTime<Utc>,
    ) -> Option<CodeRefusal> {
        let refusal = self.refusal(project, campaign_id, code);
        if !matches!(refusal, Some(CodeRefusal::Exhausted { .. }))
            || !self.reclaim(project, code, at)
        {
            return refusal;
        }
        self.refusal(project, campaign_id, code)
    }

    fn refusal(&self, project: &str, campaign_id: Uuid, code: &str) -> Option<CodeRefusal> {
        let owned = code.to_owned();
        match self.get(project, code) {
            None => Some(CodeRefusal::NotFound(owned)),
            Some(c) if c.campaign_id != campaign_id => Some(CodeRefusal::OtherCampaign(owned)),
            Some(c) if !c.active => Some(CodeRefusal::Inactive(owned)),
            Some(c) if c.used >= c.usage_limit => Some(CodeRefusal::Exhausted {
                code: owned,
                limit: c.usage_limit,
            }),
            Some(_) => None,
        }
    }

    /// Gives back the uses of `code` reserved by holds expired at `at`;
    /// whether there were any.
    fn reclaim(&mut self, project: &str, code: &str, at: DateTime<Utc>) -> bool {
        let before = self.held.len();
        self.held
            .retain(|(p, _), (c, expires)| !(p == project && c == code && *expires <= at));
        let back = before - self.held.len();
        self.use_code(project, code, -i64::try_from(back).unwrap_or(i64::MAX));
        back > 0
    }

    /// Gives back the code uses of every hold of the project expired at
    /// `at`.
    pub(super) fn sweep(&mut self, project: &str, at: DateTime<Utc>) {
        let mut codes: Vec<String> = self
            .held
            .iter()
            .filter(|((p, _), (_, expires))| p == project && *expires <= at)
            .map(|(_, (c, _))| c.clone())
            .collect();
        codes.sort();
        codes.dedup();
        for code in codes {
            self.reclaim(project, &code, at);
        }
    }

    /// Takes a use of `code` for a hold, counted until the hold ends or
    /// `expires`.
    pub(super) fn reserve(
        &mut self,
        project: &str,
        hold: Uuid,
        code: &str,
        expires: DateTime<Utc>,
    ) {
        self.use_code(project, code, 1);
        self.held
            .insert((project.to_owned(), hold), (code.to_owned(), expires));
    }

    /// Ends a hold's reservation (the use stays taken); its code if the
    /// use was still reserved (not given back as expired).
    pub(super) fn unreserve(&mut self, project: &str, hold: Uuid) -> Option<String> {
        self.held
            .remove(&(project.to_owned(), hold))
            .map(|(code, _)| code)
    }

    /// Moves a code's use count by `delta` (never below zero).
    pub(super) fn use_code(&mut self, project: &str, code: &str, delta: i64) {
        if let Some(c) = self.codes.get_mut(&(project.to_owned(), code.to_owned())) {
            c.used = (c.used + delta).max(0);
        }
    }
}

impl CodeStore for MemoryStore {
    async fn insert_codes(&self, batch: &CodeBatch) -> Result<u64> {
        let mut s = lock(&self.campaigns);
        let pools = &mut s.codes;
        let project = batch.project_id.as_str();
        let make = |code: String, usage_limit: i64| PromoCode {
            code,
            campaign_id: batch.campaign_id,
            usage_limit,
            used: 0,
            active: true,
            created_date: batch.created_date,
        };
        let progress = batch.progress.as_ref();
        match &batch.source {
            CodeSource::Generated(plan) => {
                // Drawn first, stored only when all were drawn: all or nothing.
                let mut drawn: BTreeMap<String, String> = BTreeMap::new();
                let max = CodeGenerator::max_draws(plan.count);
                let mut draw = 0u64;
                while (drawn.len() as u64) < plan.count {
                    if draw >= max {
                        return Err(Error::new(
                            ErrorCode::CodeSpaceExhausted,
                            format!(
                                "only {} of {} codes could be drawn without meeting taken codes: \
                                 make the codes longer or change the prefix or suffix",
                                drawn.len(),
                                plan.count
                            ),
                        ));
                    }
                    let code = plan.generator.code(draw);
                    draw += 1;
                    let normalized = normalize(&code);
                    if !pools.taken(project, &normalized) {
                        drawn.entry(normalized).or_insert(code);
                    }
                }
                let n = drawn.len() as u64;
                for (normalized, code) in drawn {
                    pools.insert(project, normalized, make(code, plan.usage_limit));
                }
                Progress::tell(progress, n);
                Ok(n)
            }
            CodeSource::Imported(codes) => {
                let taken: Vec<String> = codes
                    .iter()
                    .filter_map(|c| pools.get(project, &c.normalized).map(|t| t.code.clone()))
                    .take(100)
                    .collect();
                if !taken.is_empty() {
                    return Err(duplicates(&taken));
                }
                for c in codes {
                    pools.insert(
                        project,
                        c.normalized.clone(),
                        make(c.code.clone(), c.usage_limit),
                    );
                }
                Progress::tell(progress, codes.len() as u64);
                Ok(codes.len() as u64)
            }
        }
    }

    async fn list_codes(
        &self,
        project: &str,
        campaign_id: Uuid,
        page: u32,
        size: u32,
    ) -> Result<Page<PromoCode>> {
        let s = lock(&self.campaigns);
        let all: Vec<PromoCode> = s
            .codes
            .by_campaign
            .get(&(project.to_owned(), campaign_id))
            .into_iter()
            .flatten()
            .filter_map(|n| s.codes.get(project, n).cloned())
            .collect();
        Ok(Page::slice(all, page, size))
    }

    async fn codes_after(
        &self,
        project: &str,
        campaign_id: Uuid,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<PromoCode>> {
        use std::ops::Bound;
        let s = lock(&self.campaigns);
        let Some(set) = s.codes.by_campaign.get(&(project.to_owned(), campaign_id)) else {
            return Ok(Vec::new());
        };
        let start = match after {
            Some(a) => Bound::Excluded(a.to_owned()),
            None => Bound::Unbounded,
        };
        Ok(set
            .range((start, Bound::Unbounded))
            .take(limit as usize)
            .filter_map(|n| s.codes.get(project, n).cloned())
            .collect())
    }

    async fn set_code_active(
        &self,
        project: &str,
        campaign_id: Uuid,
        normalized: &str,
        active: bool,
    ) -> Result<Option<PromoCode>> {
        let mut s = lock(&self.campaigns);
        match s
            .codes
            .codes
            .get_mut(&(project.to_owned(), normalized.to_owned()))
        {
            Some(c) if c.campaign_id == campaign_id => {
                c.active = active;
                Ok(Some(c.clone()))
            }
            _ => Ok(None),
        }
    }
}

/// The error of an import meeting codes already in the project.
fn duplicates(taken: &[String]) -> Error {
    Error::new(
        ErrorCode::DuplicateCode,
        format!(
            "{} code(s) of the file are already in the project; nothing was imported",
            taken.len()
        ),
    )
    .with_fields(
        taken
            .iter()
            .map(|c| {
                FieldError::new(
                    "code",
                    ErrorCode::DuplicateCode,
                    format!("{c:?} is already in the project"),
                )
            })
            .collect(),
    )
}
