//! A campaign's revisions: the list (who saved what, when), the changes
//! between two revisions, and restoring one (a new version equal to it,
//! validated again; refused when the campaign changed since the list was
//! shown).

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;

use super::campaign_id;
use crate::adapter::admin::guard::{render, Ctx, Fail, Form};
use crate::adapter::admin::view::{self, page_of, project_base, query, Nav, Pager};
use crate::adapter::admin::Admin;
use crate::adapter::http::{scope, HttpStore};
use crate::core::campaign::PatchOp;
use crate::ErrorKind;

/// Revisions per page.
const PAGE_SIZE: u32 = 20;

/// How many changed paths a list row names before "and N more".
const PATHS_SHOWN: usize = 4;

/// One revision of the list.
#[derive(Debug)]
pub struct RevisionRow {
    pub revision: i64,
    pub when: String,
    pub by: String,
    /// The changed paths, in short.
    pub summary: String,
    /// The changes this save made, when the revision before is kept.
    pub changes_href: Option<String>,
    /// Compare with the current version (not on the current one).
    pub compare_href: Option<String>,
    /// Restore form target (not on the current one).
    pub restore_action: Option<String>,
}

#[derive(Template)]
#[template(path = "admin/revisions.html")]
struct RevisionsPage {
    nav: Option<Nav>,
    csrf: String,
    name: String,
    ref_code: String,
    version: i64,
    campaign_href: String,
    rows: Vec<RevisionRow>,
    pager: Pager,
}

/// One change of a diff, values as compact JSON.
#[derive(Debug)]
pub struct ChangeRow {
    pub op: &'static str,
    pub path: String,
    pub before: String,
    pub after: String,
}

#[derive(Template)]
#[template(path = "admin/revision_diff.html")]
struct DiffPage {
    nav: Option<Nav>,
    ref_code: String,
    from: i64,
    to: i64,
    revisions_href: String,
    rows: Vec<ChangeRow>,
}

fn summary(changes: Option<&[PatchOp]>, revision: i64) -> String {
    match changes {
        _ if revision == 1 => "Created".to_owned(),
        None => "Changes unknown (the revision before is not kept)".to_owned(),
        Some([]) => "No change of content".to_owned(),
        Some(ops) => {
            let mut paths: Vec<&str> = ops.iter().map(|o| o.path.as_str()).collect();
            paths.dedup();
            let more = paths.len().saturating_sub(PATHS_SHOWN);
            let mut text = paths
                .into_iter()
                .take(PATHS_SHOWN)
                .collect::<Vec<_>>()
                .join(", ");
            if more > 0 {
                text.push_str(" and ");
                text.push_str(&more.to_string());
                text.push_str(" more");
            }
            text
        }
    }
}

/// `GET …/campaigns/{id}/revisions`: newest first, paged.
pub async fn list<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let id = campaign_id(&id)?;
    let c = admin.campaigns.campaign(&project, id).await?;
    let page = page_of(params.get("page").map(String::as_str));
    let revisions = admin
        .campaigns
        .campaign_revisions(&project, id, page, PAGE_SIZE)
        .await?;
    let href = format!("{}/campaigns/{id}", project_base(&project));
    let base = format!("{href}/revisions");
    let diff = |from: i64, to: i64| {
        format!(
            "{base}/diff{}",
            query(&[("from", &from.to_string()), ("to", &to.to_string())])
        )
    };
    let rows = revisions
        .items
        .iter()
        .map(|r| {
            let current = r.revision == c.version;
            RevisionRow {
                revision: r.revision,
                when: view::show(r.created_date, ctx.session.offset),
                by: r.created_by.clone(),
                summary: summary(r.changes.as_deref(), r.revision),
                changes_href: (r.revision > 1 && r.changes.is_some())
                    .then(|| diff(r.revision - 1, r.revision)),
                compare_href: (!current).then(|| diff(r.revision, c.version)),
                restore_action: (!current).then(|| format!("{base}/{}/restore", r.revision)),
            }
        })
        .collect();
    let pager = Pager::new(page, PAGE_SIZE, revisions.total, |n| {
        format!("{base}{}", query(&[("page", &n.to_string())]))
    });
    Ok(render(&RevisionsPage {
        nav: Some(ctx.nav(Some(&project), "campaigns")),
        csrf: ctx.session.csrf.clone(),
        name: c.name,
        ref_code: c.ref_code,
        version: c.version,
        campaign_href: href,
        rows,
        pager,
    }))
}

/// `GET …/campaigns/{id}/revisions/diff?from=&to=`.
pub async fn diff<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let id = campaign_id(&id)?;
    let number = |name: &str| {
        params
            .get(name)
            .and_then(|v| v.parse::<i64>().ok())
            .filter(|n| *n >= 1)
            .ok_or_else(|| Fail::BadRequest(format!("{name} must be a revision number")))
    };
    let (from, to) = (number("from")?, number("to")?);
    let c = admin.campaigns.campaign(&project, id).await?;
    let diff = admin
        .campaigns
        .campaign_revision_diff(&project, id, from, to)
        .await?;
    let json = |v: &Option<serde_json::Value>| {
        v.as_ref()
            .map(|v| serde_json::to_string(v).unwrap_or_default())
            .unwrap_or_default()
    };
    let rows = diff
        .changes
        .iter()
        .map(|o| ChangeRow {
            op: match o.op.as_str() {
                "add" => "added",
                "remove" => "removed",
                _ => "changed",
            },
            path: o.path.clone(),
            before: json(&o.old_value),
            after: json(&o.value),
        })
        .collect();
    Ok(render(&DiffPage {
        nav: Some(ctx.nav(Some(&project), "campaigns")),
        ref_code: c.ref_code,
        from,
        to,
        revisions_href: format!("{}/campaigns/{id}/revisions", project_base(&project)),
        rows,
    }))
}

/// `POST …/campaigns/{id}/revisions/{revision}/restore`.
pub async fn restore<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id, revision)): Path<(String, String, String)>,
    Extension(form): Extension<Form>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let id = campaign_id(&id)?;
    let revision: i64 = revision
        .parse()
        .map_err(|_| Fail::NotFound(format!("There is no revision {revision:?}.")))?;
    // The version the list showed: a change made since is not overwritten.
    let version = form.text("version").parse().ok();
    let href = format!("{}/campaigns/{id}", project_base(&project));
    match admin
        .campaigns
        .restore_campaign_revision(&project, id, revision, version, &ctx.session.principal.sub)
        .await
    {
        Ok(c) => {
            ctx.flash(
                &admin,
                format!(
                    "Revision {revision} of {} restored as version {}.",
                    c.ref_code, c.version
                ),
                false,
            );
            Ok(Redirect::to(&href).into_response())
        }
        Err(e) if matches!(e.kind(), ErrorKind::Conflict | ErrorKind::Validation) => {
            let why = if e.code() == "stale_version" {
                "the campaign was changed by someone else since this list was shown. Check it and try again".to_owned()
            } else {
                e.to_string()
            };
            ctx.flash(
                &admin,
                format!("Revision {revision} was not restored: {why}."),
                true,
            );
            Ok(Redirect::to(&format!("{href}/revisions")).into_response())
        }
        Err(e) => Err(e.into()),
    }
}
