//! A campaign's code pool in the console: its codes with their usage, a
//! form to generate more, and a button per code to deactivate (or activate
//! again) it. Import and export are the API's and the command line's.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;

use super::campaign_id;
use crate::adapter::admin::guard::{render, Ctx, Fail, Form};
use crate::adapter::admin::view::{self, project_base, query, Nav, Pager};
use crate::adapter::admin::Admin;
use crate::adapter::http::{scope, HttpStore};
use crate::core::campaign::codes::GenerateCodes;
use crate::service::campaign::MAX_HTTP_GENERATE;
use crate::ErrorKind;

/// Rows per page.
const PAGE_SIZE: u32 = 50;

/// One code of the list.
#[derive(Debug)]
pub struct CodeRow {
    pub code: String,
    pub used: i64,
    pub limit: i64,
    pub full: bool,
    pub active: bool,
    pub created: String,
}

#[derive(Template)]
#[template(path = "admin/codes.html")]
struct CodesPage {
    nav: Option<Nav>,
    csrf: String,
    name: String,
    ref_code: String,
    campaign_href: String,
    action: String,
    max: u64,
    rows: Vec<CodeRow>,
    pager: Pager,
    /// The code searched for, as typed (empty: the whole list).
    search: String,
}

/// `GET …/campaigns/{id}/codes`: the codes, in normalized order.
pub async fn page<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let id = campaign_id(&id)?;
    let c = admin.campaigns.campaign(&project, id).await?;
    let page = view::page_of(params.get("page").map(String::as_str));
    let search = params
        .get("code")
        .map(|q| q.trim().to_owned())
        .unwrap_or_default();
    let found = if search.is_empty() {
        admin
            .campaigns
            .list_codes(&project, id, page, PAGE_SIZE)
            .await?
    } else {
        // One code, found as a redeem finds it (any case, spaces and
        // dashes aside), if it is this campaign's.
        let one = match admin.campaigns.code_info(&project, &search).await {
            Ok(info) if info.code.campaign_id == id => vec![info.code],
            Ok(_) => Vec::new(),
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::Validation) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        crate::store::Page {
            total: one.len() as u64,
            items: one,
            page: 0,
            size: PAGE_SIZE,
        }
    };
    let href = format!("{}/campaigns/{id}", project_base(&project));
    let action = format!("{href}/codes");
    let pager = Pager::new(found.page, found.size, found.total, |n| {
        format!("{action}{}", query(&[("page", &n.to_string())]))
    });
    let rows = found
        .items
        .into_iter()
        .map(|code| CodeRow {
            full: code.used >= code.usage_limit,
            used: code.used,
            limit: code.usage_limit,
            active: code.active,
            created: view::show(code.created_date, ctx.session.offset),
            code: code.code,
        })
        .collect();
    Ok(render(&CodesPage {
        nav: Some(ctx.nav(Some(&project), "campaigns")),
        csrf: ctx.session.csrf.clone(),
        name: c.name,
        ref_code: c.ref_code,
        campaign_href: href,
        action,
        max: MAX_HTTP_GENERATE,
        rows,
        pager,
        search,
    }))
}

fn number<T: std::str::FromStr>(form: &Form, name: &str) -> Result<Option<T>, Fail> {
    match form.text(name).trim() {
        "" => Ok(None),
        v => v
            .parse()
            .map(Some)
            .map_err(|_| Fail::BadRequest(format!("{name} must be a whole number"))),
    }
}

fn text(form: &Form, name: &str) -> Option<String> {
    Some(form.text(name).trim().to_owned()).filter(|v| !v.is_empty())
}

/// `POST …/campaigns/{id}/codes/generate`: generates codes, all or none.
pub async fn generate<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
    Extension(form): Extension<Form>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let id = campaign_id(&id)?;
    let request = GenerateCodes {
        count: number(&form, "count")?.unwrap_or(0),
        length: number(&form, "length")?,
        charset: None,
        prefix: text(&form, "prefix"),
        suffix: text(&form, "suffix"),
        usage_limit: number(&form, "usageLimit")?,
    };
    match admin
        .campaigns
        .generate_codes(&project, id, &request, MAX_HTTP_GENERATE, None)
        .await
    {
        Ok(n) => ctx.flash(&admin, format!("{n} codes generated."), false),
        Err(e) if matches!(e.kind(), ErrorKind::Validation | ErrorKind::Conflict) => {
            let detail: Vec<String> = e
                .fields()
                .iter()
                .map(|f| format!("{}: {}", f.field, f.message))
                .collect();
            let text = if detail.is_empty() {
                e.message().to_owned()
            } else {
                detail.join("; ")
            };
            ctx.flash(&admin, format!("No codes were generated. {text}"), true);
        }
        Err(e) => return Err(e.into()),
    }
    Ok(Redirect::to(&format!("{}/campaigns/{id}/codes", project_base(&project))).into_response())
}

/// `POST …/campaigns/{id}/codes/{code}/active`: `active=false` deactivates
/// the code, `active=true` activates it again.
pub async fn set_active<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id, code)): Path<(String, String, String)>,
    Extension(form): Extension<Form>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let id = campaign_id(&id)?;
    let active = match form.text("active") {
        "true" => true,
        "false" => false,
        _ => return Err(Fail::BadRequest("active must be true or false".into())),
    };
    let found = admin
        .campaigns
        .set_code_active(&project, id, &code, active)
        .await?;
    let verb = if active { "activated" } else { "deactivated" };
    ctx.flash(&admin, format!("Code {} {verb}.", found.code), false);
    let page = form.text("page");
    Ok(Redirect::to(&format!(
        "{}/campaigns/{id}/codes{}",
        project_base(&project),
        query(&[("page", page)])
    ))
    .into_response())
}
