//! "Try it here": a cart and attributes (a small form, or raw JSON), a
//! channel and an instant → which campaigns fire, their benefits with
//! formulas evaluated, why each other one does not, and the quota keys a
//! redeem would charge with what each has left. Nothing is written.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde_json::{json, Map, Value};

use super::campaign_id;
use crate::adapter::admin::guard::{render, Ctx, Fail, Form};
use crate::adapter::admin::view::{self, project_base, Nav};
use crate::adapter::admin::Admin;
use crate::adapter::http::{scope, HttpStore};
use crate::core::campaign::SearchRequest;
use crate::service::campaign::Preview;

/// Item rows of the small form.
const ITEM_ROWS: usize = 3;
/// Attribute rows of the small form.
const ATTRIBUTE_ROWS: usize = 4;

/// One shown benefit.
#[derive(Debug)]
pub struct BenefitView {
    pub rule: String,
    pub action: String,
    pub data: Vec<(String, String, bool)>,
}

/// One quota a redeem would charge.
#[derive(Debug)]
pub struct QuotaView {
    pub key: String,
    pub amount: String,
    pub used: String,
    pub limit: String,
    pub remaining: String,
    pub fits: bool,
    /// `<progress>` value and max, as text.
    pub bar: (String, String),
}

/// A campaign that fires.
#[derive(Debug)]
pub struct HitView {
    pub name: String,
    pub ref_code: String,
    pub benefits: Vec<BenefitView>,
    pub quotas: Vec<QuotaView>,
    pub redeem_error: Option<String>,
    pub exhausted: bool,
    pub suppressed: Option<String>,
}

/// A campaign that does not fire, and why.
#[derive(Debug)]
pub struct MissView {
    pub ref_code: String,
    pub reason: String,
    pub field: String,
    pub attribute: String,
    pub op: String,
    pub expected: String,
    pub actual: String,
    pub message: String,
}

#[derive(Template)]
#[template(path = "admin/try.html")]
struct TryPage {
    nav: Option<Nav>,
    title: String,
    action: String,
    csrf: String,
    offset: String,
    total: String,
    currency: String,
    items: Vec<[String; 5]>,
    attributes: Vec<[String; 2]>,
    channel: String,
    at: String,
    raw: String,
    error: Option<String>,
    ran: bool,
    sent: String,
    evaluated_at: String,
    hits: Vec<HitView>,
    misses: Vec<MissView>,
}

/// The request the form describes: the raw JSON when given, else the
/// small form's fields.
fn request_of(form: &Form) -> Result<Value, String> {
    let raw = form.text("raw").trim();
    if !raw.is_empty() {
        return serde_json::from_str(raw).map_err(|e| format!("the raw JSON is not valid: {e}"));
    }
    let mut items = Vec::new();
    for i in 0..ITEM_ROWS {
        let f = |k: &str| form.text(&format!("items[{i}].{k}")).trim().to_owned();
        if f("sku").is_empty() && f("price").is_empty() && f("amount").is_empty() {
            continue;
        }
        let tags: Vec<String> = f("tags")
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect();
        items.push(json!({
            "sku": f("sku"), "name": f("name"), "amount": f("amount"), "price": f("price"), "tags": tags
        }));
    }
    let mut attributes = Map::new();
    for i in 0..ATTRIBUTE_ROWS {
        let name = form.text(&format!("attr[{i}].name")).trim();
        if !name.is_empty() {
            attributes.insert(
                name.to_owned(),
                Value::String(form.text(&format!("attr[{i}].value")).to_owned()),
            );
        }
    }
    let mut cart = Map::new();
    for (k, field) in [("totalPrice", "total"), ("currency", "currency")] {
        let v = form.text(field).trim();
        if !v.is_empty() {
            cart.insert(k.to_owned(), Value::String(v.to_owned()));
        }
    }
    cart.insert("items".to_owned(), Value::Array(items));
    let mut req = json!({"attribute": attributes, "cart": cart});
    let channel = form.text("channel").trim();
    if !channel.is_empty() {
        req["channel"] = Value::String(channel.to_owned());
    }
    Ok(req)
}

fn blank_page(ctx: &Ctx, project: &str, title: String, action: String) -> TryPage {
    TryPage {
        nav: Some(ctx.nav(Some(project), "try")),
        title,
        action,
        csrf: ctx.session.csrf.clone(),
        offset: view::offset_label(ctx.session.offset),
        total: String::new(),
        currency: String::new(),
        items: vec![Default::default(); ITEM_ROWS],
        attributes: vec![Default::default(); ATTRIBUTE_ROWS],
        channel: String::new(),
        at: String::new(),
        raw: String::new(),
        error: None,
        ran: false,
        sent: String::new(),
        evaluated_at: String::new(),
        hits: Vec::new(),
        misses: Vec::new(),
    }
}

/// The form as submitted, kept for the page that shows the result.
fn refill(page: &mut TryPage, form: &Form) {
    page.total = form.text("total").to_owned();
    page.currency = form.text("currency").to_owned();
    for (i, row) in page.items.iter_mut().enumerate() {
        for (j, k) in ["sku", "name", "amount", "price", "tags"]
            .iter()
            .enumerate()
        {
            row[j] = form.text(&format!("items[{i}].{k}")).to_owned();
        }
    }
    for (i, row) in page.attributes.iter_mut().enumerate() {
        row[0] = form.text(&format!("attr[{i}].name")).to_owned();
        row[1] = form.text(&format!("attr[{i}].value")).to_owned();
    }
    page.channel = form.text("channel").to_owned();
    page.at = form.text("at").to_owned();
    page.raw = form.text("raw").to_owned();
}

fn show_preview(page: &mut TryPage, p: Preview, offset: chrono::FixedOffset) {
    page.ran = true;
    page.evaluated_at = view::show(p.at, offset);
    page.hits = p
        .hits
        .into_iter()
        .map(|h| HitView {
            name: h.campaign.name.clone(),
            ref_code: h.campaign.ref_code.clone(),
            benefits: h
                .actions
                .into_iter()
                .map(|a| BenefitView {
                    rule: a.rule.name.clone(),
                    action: a.action.action.clone().unwrap_or_default(),
                    data: a
                        .action
                        .data
                        .iter()
                        .map(|d| (d.attribute.clone(), d.value.clone(), d.is_formula))
                        .collect(),
                })
                .collect(),
            quotas: h
                .quotas
                .into_iter()
                .map(|q| QuotaView {
                    bar: (q.used.min(q.limit).to_string(), q.limit.to_string()),
                    key: q.key,
                    amount: q.amount.to_string(),
                    used: q.used.to_string(),
                    limit: q.limit.to_string(),
                    remaining: q.remaining.to_string(),
                    fits: q.fits,
                })
                .collect(),
            redeem_error: h.redeem_error,
            exhausted: h.exhausted,
            suppressed: h.suppressed.map(|s| s.message),
        })
        .collect();
    page.misses = p
        .misses
        .into_iter()
        .map(|m| MissView {
            ref_code: m.ref_code,
            reason: m.reason,
            field: m.field.unwrap_or_default(),
            attribute: m.attribute.unwrap_or_default(),
            op: m.op.unwrap_or_default(),
            expected: m.expected.unwrap_or_default(),
            actual: m.actual.unwrap_or_else(|| "(missing)".to_owned()),
            message: m.message,
        })
        .collect();
}

async fn run<S: HttpStore>(
    admin: &Admin<S>,
    ctx: &Ctx,
    project: &str,
    mut page: TryPage,
    form: &Form,
    only: Option<&str>,
) -> Result<Response, Fail> {
    refill(&mut page, form);
    let offset = ctx.session.offset;
    let at = match view::parse_input(form.text("at"), offset) {
        Ok(at) => at,
        Err(e) => {
            page.error = Some(format!("At: {e}"));
            return Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)).into_response());
        }
    };
    let request: Result<SearchRequest, String> = request_of(form).and_then(|v| {
        page.sent = serde_json::to_string_pretty(&v).unwrap_or_default();
        serde_json::from_value(v).map_err(|e| format!("the request is not a search request: {e}"))
    });
    let request = match request {
        Ok(r) => r,
        Err(e) => {
            page.error = Some(e);
            return Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)).into_response());
        }
    };
    match admin.campaigns.preview(project, &request, at, only).await {
        Ok(p) => {
            show_preview(&mut page, p, offset);
            Ok(render(&page))
        }
        Err(e)
            if matches!(
                e.kind(),
                crate::ErrorKind::Validation
                    | crate::ErrorKind::BadRequest
                    | crate::ErrorKind::LimitExceeded
            ) =>
        {
            page.error = Some(e.message().to_owned());
            Ok((crate::adapter::http::status_of(e.kind()), render(&page)).into_response())
        }
        Err(e) => Err(e.into()),
    }
}

/// `GET …/try`: the project-wide form.
pub async fn project_page<S: HttpStore>(
    State(_): State<Admin<S>>,
    ctx: Ctx,
    Path(project): Path<String>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let action = format!("{}/try", project_base(&project));
    Ok(render(&blank_page(
        &ctx,
        &project,
        "Try a cart".into(),
        action,
    )))
}

/// `POST …/try`.
pub async fn project_run<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path(project): Path<String>,
    Extension(form): Extension<Form>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let action = format!("{}/try", project_base(&project));
    let page = blank_page(&ctx, &project, "Try a cart".into(), action);
    run(&admin, &ctx, &project, page, &form, None).await
}

/// `GET …/campaigns/{id}/try`.
pub async fn campaign_page<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let c = admin
        .campaigns
        .campaign(&project, campaign_id(&id)?)
        .await?;
    let action = format!("{}/campaigns/{}/try", project_base(&project), c.id);
    let title = format!("Try {} ({})", c.name, c.ref_code);
    Ok(render(&blank_page(&ctx, &project, title, action)))
}

/// `POST …/campaigns/{id}/try`: only this campaign.
pub async fn campaign_run<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, id)): Path<(String, String)>,
    Extension(form): Extension<Form>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CAMPAIGN_ADMIN])?;
    let c = admin
        .campaigns
        .campaign(&project, campaign_id(&id)?)
        .await?;
    let action = format!("{}/campaigns/{}/try", project_base(&project), c.id);
    let title = format!("Try {} ({})", c.name, c.ref_code);
    let page = blank_page(&ctx, &project, title, action);
    run(&admin, &ctx, &project, page, &form, Some(&c.ref_code)).await
}
