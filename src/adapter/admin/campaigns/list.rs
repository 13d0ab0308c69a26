//! The campaign list: one search box (name, groupName, refCode, status),
//! filters, sorting, paging, badges, and enable/disable in place. The
//! search and every filter run in the store.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;

use super::{campaign_id, input_of};
use crate::adapter::admin::guard::{render, Ctx, Fail, Form};
use crate::adapter::admin::view::{self, project_base, query, Nav, Pager};
use crate::adapter::admin::Admin;
use crate::adapter::http::{scope, HttpStore};
use crate::core::campaign::{Campaign, CampaignStatus};
use crate::store::{CampaignQuery, CampaignSort, Period, SortDirection};
use crate::ErrorKind;

/// Campaigns per page.
pub const PAGE_SIZE: u32 = 20;

/// One row of the list, ready to show.
#[derive(Debug)]
pub struct Row {
    pub href: String,
    pub name: String,
    pub ref_code: String,
    pub group: String,
    pub channel: String,
    pub priority: i32,
    pub start: String,
    pub end: String,
    pub modified: String,
    /// `current`, `scheduled` or `ended`.
    pub period: &'static str,
    pub enabled: bool,
    pub active: bool,
    pub version: i64,
    pub status_action: String,
}

/// A sortable column header.
#[derive(Debug)]
pub struct Column {
    pub label: &'static str,
    pub href: String,
    /// `ascending`, `descending` or "" (the `aria-sort` value).
    pub sorted: &'static str,
    pub class: &'static str,
}

#[derive(Template)]
#[template(path = "admin/campaigns.html")]
struct ListPage {
    nav: Option<Nav>,
    base: String,
    q: String,
    status: String,
    channel: String,
    group: String,
    period: String,
    sort: String,
    columns: Vec<Column>,
    rows: Vec<Row>,
    pager: Pager,
    csrf: String,
    back: String,
}

const SORTS: [(&str, &str, CampaignSort, &str); 6] = [
    ("Name", "name", CampaignSort::Name, ""),
    ("Code", "refCode", CampaignSort::RefCode, ""),
    ("Priority", "priority", CampaignSort::Priority, "opt"),
    ("Starts", "startDate", CampaignSort::StartDate, "opt"),
    ("Ends", "endDate", CampaignSort::EndDate, ""),
    (
        "Modified",
        "lastModifiedDate",
        CampaignSort::LastModifiedDate,
        "opt",
    ),
];

/// `name` or `-name` → the sort key.
fn parse_sort(s: &str) -> Option<(CampaignSort, SortDirection)> {
    let (dir, field) = match s.strip_prefix('-') {
        Some(f) => (SortDirection::Desc, f),
        None => (SortDirection::Asc, s),
    };
    CampaignSort::parse(field).map(|f| (f, dir))
}

/// `GET /admin/p/{project}/campaigns`.
pub async fn list<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path(project): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let p = |k: &str| {
        params
            .get(k)
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    let (q, status, channel, group, period, sort) = (
        p("q"),
        p("status"),
        p("channel"),
        p("group"),
        p("period"),
        p("sort"),
    );
    let page = view::page_of(params.get("page").map(String::as_str));
    let status_filter = match status.as_str() {
        "" => None,
        s => {
            let st = CampaignStatus::parse(s);
            if !st.is_known() {
                return Err(Fail::BadRequest(format!("unknown status {s:?}")));
            }
            Some(st)
        }
    };
    let now = admin.campaigns.clock().now();
    let period_filter = match period.as_str() {
        "" => None,
        s => Some((
            Period::parse(s).ok_or_else(|| Fail::BadRequest(format!("unknown period {s:?}")))?,
            now,
        )),
    };
    let sort_key = if sort.is_empty() {
        None
    } else {
        Some(parse_sort(&sort).ok_or_else(|| Fail::BadRequest(format!("unknown sort {sort:?}")))?)
    };
    let none_if_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let query_spec = CampaignQuery {
        q: none_if_empty(&q),
        status: status_filter,
        channel: none_if_empty(&channel),
        group: none_if_empty(&group),
        period: period_filter,
        page,
        size: PAGE_SIZE,
        sort: sort_key.into_iter().collect(),
    };
    let found = admin
        .campaigns
        .list_campaigns(&project, &query_spec)
        .await?;
    let base = project_base(&project);
    let list_url = |sort: &str, page: u32| {
        let page = if page == 0 {
            String::new()
        } else {
            page.to_string()
        };
        format!(
            "{base}/campaigns{}",
            query(&[
                ("q", &q),
                ("status", &status),
                ("channel", &channel),
                ("group", &group),
                ("period", &period),
                ("sort", sort),
                ("page", &page),
            ])
        )
    };
    let columns = SORTS
        .iter()
        .map(|(label, field, key, class)| {
            let (next, sorted) = match sort_key {
                Some((k, SortDirection::Asc)) if k == *key => (format!("-{field}"), "ascending"),
                Some((k, SortDirection::Desc)) if k == *key => ((*field).to_owned(), "descending"),
                _ => ((*field).to_owned(), ""),
            };
            Column {
                label,
                href: list_url(&next, 0),
                sorted,
                class,
            }
        })
        .collect();
    let offset = ctx.session.offset;
    let rows = found
        .items
        .iter()
        .map(|c| row(c, &base, now, offset))
        .collect();
    let pager = Pager::new(found.page, found.size, found.total, |n| list_url(&sort, n));
    let back = list_url(&sort, page);
    Ok(render(&ListPage {
        nav: Some(ctx.nav(Some(&project), "campaigns")),
        base,
        q,
        status,
        channel,
        group,
        period,
        sort,
        columns,
        rows,
        pager,
        csrf: ctx.session.csrf.clone(),
        back,
    }))
}

fn row(
    c: &Campaign,
    base: &str,
    now: chrono::DateTime<chrono::Utc>,
    offset: chrono::FixedOffset,
) -> Row {
    let href = format!("{base}/campaigns/{}", c.id);
    Row {
        status_action: format!("{href}/status"),
        href,
        name: c.name.clone(),
        ref_code: c.ref_code.clone(),
        group: c.group_name.clone().unwrap_or_default(),
        channel: c.channel.clone().unwrap_or_default(),
        priority: c.priority,
        start: view::show(c.start_date, offset),
        end: view::show(c.end_date, offset),
        modified: view::show(c.last_modified_date, offset),
        period: Period::of(c.start_date, c.end_date, now).as_str(),
        enabled: c.status == CampaignStatus::Enable,
        active: c.active,
        version: c.version,
    }
}

/// `POST /admin/p/{project}/campaigns/{id}/status`: enable or disable.
pub async fn set_status<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
    Extension(form): Extension<Form>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let id = campaign_id(&id)?;
    let status = CampaignStatus::parse(form.text("status"));
    if !status.is_known() {
        return Err(Fail::BadRequest("status must be ENABLE or DISABLE".into()));
    }
    let current = admin.campaigns.campaign(&project, id).await?;
    let mut input = input_of(&current);
    input.status = status.clone();
    // The version the list showed: a change made since is not overwritten.
    input.version = form.text("version").parse().ok().or(input.version);
    let verb = if status == CampaignStatus::Enable {
        "enabled"
    } else {
        "disabled"
    };
    match admin
        .campaigns
        .update_campaign(&project, id, input, &ctx.session.principal.sub)
        .await
    {
        Ok(c) => ctx.flash(
            &admin,
            format!("Campaign {} ({}) {verb}.", c.name, c.ref_code),
            false,
        ),
        Err(e) if e.kind() == ErrorKind::Conflict => ctx.flash(
            &admin,
            format!(
                "Campaign {} was changed by someone else since this list was shown; nothing was changed. Check it and try again.",
                current.ref_code
            ),
            true,
        ),
        Err(e) => return Err(e.into()),
    }
    let back = form.text("back");
    let to = if back.starts_with(&format!("{}/", project_base(&project))) {
        back.to_owned()
    } else {
        format!("{}/campaigns", project_base(&project))
    };
    Ok(Redirect::to(&to).into_response())
}
