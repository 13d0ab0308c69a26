//! Quota usage of a campaign, the redemption list (by campaign code and
//! user), and cancelling a redemption (asked first; cancelling twice
//! changes nothing).

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::FixedOffset;
use rust_decimal::Decimal;
use uuid::Uuid;

use super::campaigns::campaign_id;
use super::guard::{render, Ctx, Fail};
use super::view::{self, project_base, query, Nav, Pager};
use super::Admin;
use crate::adapter::http::{scope, HttpStore};
use crate::core::campaign::{Redemption, TxStatus};
use crate::service::campaign::QuotaUsageQuery;
use crate::store::RedemptionQuery;

/// Rows per page of the lists here.
const PAGE_SIZE: u32 = 20;

/// One quota key's usage.
#[derive(Debug)]
pub struct UsageRow {
    pub key: String,
    /// The rolling window (`P1D`), empty for a calendar quota.
    pub window: String,
    pub used: String,
    /// What live holds reserve of `used`, empty when nothing.
    pub held: String,
    pub limit: String,
    pub remaining: String,
    pub bar: Option<(String, String)>,
    pub full: bool,
}

/// A quota definition of the campaign.
#[derive(Debug)]
pub struct QuotaDef {
    pub key: String,
    pub value: String,
    pub value_field: String,
    /// The rolling window, empty for a calendar quota.
    pub window: String,
}

/// A live hold of the campaign.
#[derive(Debug)]
pub struct HoldRow {
    pub id: String,
    pub user: String,
    pub keys: String,
    pub expires: String,
}

#[derive(Template)]
#[template(path = "admin/quotas.html")]
struct QuotasPage {
    nav: Option<Nav>,
    name: String,
    ref_code: String,
    campaign_href: String,
    redemptions_href: String,
    definitions: Vec<QuotaDef>,
    filter: String,
    action: String,
    rows: Vec<UsageRow>,
    holds: Vec<HoldRow>,
    pager: Pager,
}

/// `GET …/campaigns/{id}/quotas`: usage per key, with a bar.
pub async fn quotas<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let id = campaign_id(&id)?;
    let c = admin.campaigns.campaign(&project, id).await?;
    // Keys page by key: `after` is where this page starts (the
    // form's "start after key", or the previous page's last).
    let after = params
        .get("after")
        .map(|k| k.trim().to_owned())
        .filter(|k| !k.is_empty());
    let page_query = QuotaUsageQuery {
        after: after.clone(),
        size: PAGE_SIZE,
        legacy: false,
    };
    let usage = admin
        .campaigns
        .quota_usage(&project, id, &page_query)
        .await?;
    let href = format!("{}/campaigns/{id}", project_base(&project));
    let action = format!("{href}/quotas");
    let shown = usage.items.len();
    let rows = usage
        .items
        .into_iter()
        .map(|u| {
            let remaining = u.limit.map(|l| (l - u.used).max(Decimal::ZERO));
            UsageRow {
                bar: u.limit.map(|l| (u.used.min(l).to_string(), l.to_string())),
                full: remaining.is_some_and(|r| r.is_zero()),
                remaining: remaining.map(|r| r.to_string()).unwrap_or_default(),
                limit: u.limit.map(|l| l.to_string()).unwrap_or_default(),
                used: u.used.to_string(),
                held: u.held.map(|h| h.to_string()).unwrap_or_default(),
                window: u.window.map(|w| w.to_string()).unwrap_or_default(),
                key: u.key,
            }
        })
        .collect();
    let pager = Pager {
        summary: match (shown, &usage.next) {
            (0, None) => "No more keys".to_owned(),
            (0, Some(_)) => "No keys here; more may follow".to_owned(),
            (n, _) => format!("Showing {n} keys"),
        },
        prev: after.is_some().then(|| action.clone()),
        next: usage
            .next
            .map(|next| format!("{action}{}", query(&[("after", &next)]))),
    };
    let filter = after.unwrap_or_default();
    let holds = admin
        .campaigns
        .live_holds(&project, id)
        .await?
        .into_iter()
        .map(|h| HoldRow {
            id: h.id.to_string(),
            user: h.user_id.unwrap_or_default(),
            keys: h
                .quotas
                .iter()
                .map(|q| format!("{} +{}", q.key, q.amount))
                .collect::<Vec<_>>()
                .join(", "),
            expires: h
                .expires_at
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        })
        .collect();
    Ok(render(&QuotasPage {
        nav: Some(ctx.nav(Some(&project), "campaigns")),
        redemptions_href: format!(
            "{}/redemptions{}",
            project_base(&project),
            query(&[("campaignCode", &c.ref_code)])
        ),
        definitions: c
            .quotas
            .iter()
            .map(|q| QuotaDef {
                key: q.key.clone(),
                value: q.value.to_string(),
                value_field: q.value_field.clone().unwrap_or_default(),
                window: q.window.clone().unwrap_or_default(),
            })
            .collect(),
        name: c.name,
        ref_code: c.ref_code,
        campaign_href: href,
        filter,
        action,
        rows,
        holds,
        pager,
    }))
}

/// One redemption, ready to show.
#[derive(Debug)]
pub struct RedemptionRow {
    pub created: String,
    pub campaign_code: String,
    pub user: String,
    pub channel: String,
    pub cancelled: bool,
    pub cancelled_at: String,
    pub benefits: Vec<String>,
    pub charges: Vec<String>,
    pub cancel_href: String,
}

fn row(r: &Redemption, base: &str, offset: FixedOffset) -> RedemptionRow {
    RedemptionRow {
        created: view::show(r.created_date, offset),
        campaign_code: r.campaign_code.clone(),
        user: r.user_id.clone().unwrap_or_default(),
        channel: r.channel.clone().unwrap_or_default(),
        cancelled: r.status == TxStatus::Cancelled,
        cancelled_at: r
            .cancelled_date
            .map(|t| view::show(t, offset))
            .unwrap_or_default(),
        benefits: r
            .action_txs
            .iter()
            .map(|tx| {
                let data: Vec<String> = tx
                    .then
                    .data
                    .iter()
                    .map(|d| format!("{}={}", d.attribute, d.value))
                    .collect();
                format!(
                    "{} {}",
                    tx.then.action.clone().unwrap_or_default(),
                    data.join(", ")
                )
            })
            .collect(),
        charges: r
            .quotas
            .iter()
            .map(|c| format!("{} +{} (limit {})", c.key, c.amount, c.limit))
            .collect(),
        cancel_href: format!("{base}/redemptions/{}/cancel", r.id),
    }
}

#[derive(Template)]
#[template(path = "admin/redemptions.html")]
struct ListPage {
    nav: Option<Nav>,
    action: String,
    campaign_code: String,
    user_id: String,
    rows: Vec<RedemptionRow>,
    pager: Pager,
    can_cancel: bool,
}

/// `GET …/redemptions?campaignCode=&userId=&page=`.
pub async fn list<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path(project): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_READ])?;
    let p = |k: &str| {
        params
            .get(k)
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    let (code, user) = (p("campaignCode"), p("userId"));
    let page = view::page_of(params.get("page").map(String::as_str));
    let found = admin
        .campaigns
        .list_redemptions(
            &project,
            &RedemptionQuery {
                campaign_code: (!code.is_empty()).then(|| code.clone()),
                user_id: (!user.is_empty()).then(|| user.clone()),
                page,
                size: PAGE_SIZE,
            },
        )
        .await?;
    let base = project_base(&project);
    let action = format!("{base}/redemptions");
    let pager = Pager::new(found.page, found.size, found.total, |n| {
        format!(
            "{action}{}",
            query(&[
                ("campaignCode", &code),
                ("userId", &user),
                ("page", &n.to_string())
            ])
        )
    });
    let offset = ctx.session.offset;
    Ok(render(&ListPage {
        nav: Some(ctx.nav(Some(&project), "redemptions")),
        rows: found.items.iter().map(|r| row(r, &base, offset)).collect(),
        action,
        campaign_code: code,
        user_id: user,
        pager,
        can_cancel: ctx.may(scope::CAMPAIGN_WRITE),
    }))
}

#[derive(Template)]
#[template(path = "admin/cancel.html")]
struct CancelPage {
    nav: Option<Nav>,
    csrf: String,
    r: RedemptionRow,
    back: String,
}

fn redemption_id(id: &str) -> Result<Uuid, Fail> {
    Uuid::parse_str(id).map_err(|_| Fail::NotFound(format!("There is no redemption {id:?}.")))
}

/// `GET …/redemptions/{id}/cancel`: asks first.
pub async fn cancel_page<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_WRITE])?;
    let r = admin
        .campaigns
        .redemption(&project, redemption_id(&id)?)
        .await?;
    let base = project_base(&project);
    Ok(render(&CancelPage {
        nav: Some(ctx.nav(Some(&project), "redemptions")),
        csrf: ctx.session.csrf.clone(),
        r: row(&r, &base, ctx.session.offset),
        back: format!("{base}/redemptions"),
    }))
}

/// `POST …/redemptions/{id}/cancel`: gives the quota back; again, nothing.
pub async fn cancel<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_WRITE])?;
    let id = redemption_id(&id)?;
    let before = admin.campaigns.redemption(&project, id).await?;
    let after = admin.campaigns.cancel_redemption(&project, id).await?;
    let message = if before.status == TxStatus::Cancelled {
        format!(
            "Redemption of {} was already cancelled; nothing changed.",
            after.campaign_code
        )
    } else {
        format!(
            "Redemption of {} cancelled: its quota usage was given back.",
            after.campaign_code
        )
    };
    ctx.flash(&admin, message, false);
    Ok(Redirect::to(&format!(
        "{}/redemptions{}",
        project_base(&project),
        query(&[("campaignCode", &after.campaign_code)])
    ))
    .into_response())
}
