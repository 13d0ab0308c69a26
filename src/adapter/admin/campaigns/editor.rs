//! The campaign editor: create, edit, duplicate, delete. The form is
//! judged by the API's own validator (through the service) and each
//! problem is shown beside its input; a save over a newer version is
//! refused and says so, keeping everything typed.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use chrono::FixedOffset;

use super::editor_view::{page, Frame, Stale};
use super::form::Draft;
use super::{campaign_id, input_of};
use crate::adapter::admin::guard::{render, Ctx, Fail, Form};
use crate::adapter::admin::view::{project_base, Nav};
use crate::adapter::admin::Admin;
use crate::adapter::http::{scope, HttpStore};
use crate::core::error::FieldError;
use crate::ErrorKind;

/// `GET …/campaigns/new`.
pub async fn new_page<S: HttpStore>(
    State(_): State<Admin<S>>,
    ctx: Ctx,
    Path(project): Path<String>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let frame = Frame {
        title: "New campaign".into(),
        action: format!("{}/campaigns/new", project_base(&project)),
        project: &project,
        saved: None,
        stale: None,
    };
    Ok(page(&ctx, frame, &Draft::blank(), Vec::new()))
}

/// `GET …/campaigns/{id}/duplicate`: a new campaign's form filled from this
/// one (a new refCode to choose; rule ids and benefit refs made anew).
pub async fn duplicate_page<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let c = admin
        .campaigns
        .campaign(&project, campaign_id(&id)?)
        .await?;
    let mut draft = Draft::of(&input_of(&c), ctx.session.offset);
    draft.version.clear();
    draft.name = format!("Copy of {}", c.name);
    draft.ref_code = format!("{}-COPY", c.ref_code);
    for rule in &mut draft.rules {
        rule.id.clear();
        for then in &mut rule.then {
            then.action_ref.clear();
        }
    }
    let frame = Frame {
        title: format!("New campaign from {}", c.ref_code),
        action: format!("{}/campaigns/new", project_base(&project)),
        project: &project,
        saved: None,
        stale: None,
    };
    Ok(page(&ctx, frame, &draft, Vec::new()))
}

/// `GET …/campaigns/{id}`.
pub async fn edit_page<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let c = admin
        .campaigns
        .campaign(&project, campaign_id(&id)?)
        .await?;
    let draft = Draft::of(&input_of(&c), ctx.session.offset);
    let frame = Frame {
        title: c.name.clone(),
        action: format!("{}/campaigns/{}", project_base(&project), c.id),
        project: &project,
        saved: Some(&c),
        stale: None,
    };
    Ok(page(&ctx, frame, &draft, Vec::new()))
}

/// What the form asked for.
enum Intent {
    /// A structural edit: show the form again.
    Edit(String),
    /// Save; with `Some(v)`, over version `v` (after a stale warning).
    Save(Option<i64>),
}

fn intent(form: &Form) -> Intent {
    match form.text("op") {
        "" | "save" => Intent::Save(None),
        op => match op.strip_prefix("save-over:") {
            Some(v) => Intent::Save(v.parse().ok()),
            None => Intent::Edit(op.to_owned()),
        },
    }
}

/// A save: over which version (after a stale warning), and text problems.
type Save = (Option<i64>, Vec<FieldError>);

/// The draft and the text problems of a submitted form; `None` when the
/// form asked for a structural edit (already applied).
fn read(form: &Form, offset: FixedOffset) -> (Draft, Option<Save>) {
    let mut draft = Draft::from_form(form);
    match intent(form) {
        Intent::Edit(op) => {
            draft.apply(&op);
            (draft, None)
        }
        Intent::Save(over) => {
            let (_, problems) = draft.to_input(offset);
            (draft, Some((over, problems)))
        }
    }
}

/// `POST …/campaigns/new`.
pub async fn create<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path(project): Path<String>,
    Extension(form): Extension<Form>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let base = project_base(&project);
    let frame = |stale| Frame {
        title: "New campaign".into(),
        action: format!("{base}/campaigns/new"),
        project: &project,
        saved: None,
        stale,
    };
    let offset = ctx.session.offset;
    let (draft, save) = read(&form, offset);
    let Some((_, problems)) = save else {
        return Ok(page(&ctx, frame(None), &draft, Vec::new()));
    };
    let (input, _) = draft.to_input(offset);
    let sub = ctx.session.principal.sub.clone();
    let result = if problems.is_empty() {
        admin.campaigns.create_campaign(&project, input, &sub).await
    } else {
        Err(judge(&admin, &project, input, problems))
    };
    match result {
        Ok(c) => {
            ctx.flash(
                &admin,
                format!("Campaign {} ({}) created.", c.name, c.ref_code),
                false,
            );
            Ok(Redirect::to(&format!("{base}/campaigns/{}", c.id)).into_response())
        }
        Err(e) => match field_errors(e) {
            Ok(fields) => Ok(page(&ctx, frame(None), &draft, fields)),
            Err(e) => Err(e.into()),
        },
    }
}

/// The validator's verdict on an input whose text already has `problems`
/// (those fields were left out): all problems, text ones first.
fn judge<S: HttpStore>(
    admin: &Admin<S>,
    project: &str,
    input: crate::core::campaign::CampaignInput,
    problems: Vec<FieldError>,
) -> crate::Error {
    let mut all = problems;
    if let Err(e) = admin.campaigns.check_campaign(project, input) {
        for f in e.fields() {
            if !all.iter().any(|p| p.field == f.field) {
                all.push(f.clone());
            }
        }
    }
    crate::Error::validation(all)
}

/// The field errors to show in the form, or the error that is not about
/// fields (shown as an error page).
fn field_errors(e: crate::Error) -> Result<Vec<FieldError>, crate::Error> {
    match (e.kind(), e.code()) {
        (ErrorKind::Validation, _) if !e.fields().is_empty() => Ok(e.fields().to_vec()),
        (ErrorKind::Conflict, "duplicate_ref_code") => Ok(vec![FieldError::new(
            "refCode",
            "duplicate_ref_code",
            e.message(),
        )]),
        _ => Err(e),
    }
}

/// `POST …/campaigns/{id}`.
pub async fn update<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
    Extension(form): Extension<Form>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let id = campaign_id(&id)?;
    let current = admin.campaigns.campaign(&project, id).await?;
    let base = project_base(&project);
    let href = format!("{base}/campaigns/{id}");
    let frame = |stale, saved| Frame {
        title: current.name.clone(),
        action: href.clone(),
        project: &project,
        saved,
        stale,
    };
    let offset = ctx.session.offset;
    let (draft, save) = read(&form, offset);
    let Some((over, problems)) = save else {
        return Ok(page(&ctx, frame(None, Some(&current)), &draft, Vec::new()));
    };
    let (mut input, _) = draft.to_input(offset);
    if let Some(v) = over {
        input.version = Some(v);
    }
    let result = if problems.is_empty() {
        admin
            .campaigns
            .update_campaign(&project, id, input, &ctx.session.principal.sub)
            .await
    } else {
        Err(judge(&admin, &project, input, problems))
    };
    match result {
        Ok(c) => {
            ctx.flash(
                &admin,
                format!(
                    "Campaign {} ({}) saved: version {}.",
                    c.name, c.ref_code, c.version
                ),
                false,
            );
            Ok(Redirect::to(&href).into_response())
        }
        Err(e) if e.code() == "stale_version" => {
            let stored = admin.campaigns.campaign(&project, id).await?;
            let stale = Stale {
                current: stored.version,
                save_over: format!("save-over:{}", stored.version),
                reload: href.clone(),
            };
            Ok(page(
                &ctx,
                frame(Some(stale), Some(&stored)),
                &draft,
                Vec::new(),
            ))
        }
        Err(e) => match field_errors(e) {
            Ok(fields) => Ok(page(&ctx, frame(None, Some(&current)), &draft, fields)),
            Err(e) => Err(e.into()),
        },
    }
}

#[derive(Template)]
#[template(path = "admin/delete.html")]
struct DeletePage {
    nav: Option<Nav>,
    csrf: String,
    name: String,
    ref_code: String,
    action: String,
    back: String,
}

/// `GET …/campaigns/{id}/delete`: asks first.
pub async fn delete_page<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let c = admin
        .campaigns
        .campaign(&project, campaign_id(&id)?)
        .await?;
    let href = format!("{}/campaigns/{}", project_base(&project), c.id);
    Ok(render(&DeletePage {
        nav: Some(ctx.nav(Some(&project), "campaigns")),
        csrf: ctx.session.csrf.clone(),
        name: c.name,
        ref_code: c.ref_code,
        action: format!("{href}/delete"),
        back: href,
    }))
}

/// `POST …/campaigns/{id}/delete`.
pub async fn delete<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let id = campaign_id(&id)?;
    let c = admin.campaigns.campaign(&project, id).await?;
    admin.campaigns.delete_campaign(&project, id).await?;
    ctx.flash(
        &admin,
        format!(
            "Campaign {} ({}) deleted. Its redemptions and quota usage are kept.",
            c.name, c.ref_code
        ),
        false,
    );
    Ok(Redirect::to(&format!("{}/campaigns", project_base(&project))).into_response())
}
