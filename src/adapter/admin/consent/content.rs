//! Privacy notices, consents and purposes: lists with the content store's
//! filters, and a create/edit form with the English and Thai texts side by
//! side. A save that raises a published record's revision says first that
//! every data subject will be asked again.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Extension;
use serde_json::{Map, Value};

use super::kinds::{kind, text_of, Input, Kind};
use crate::adapter::admin::guard::{render, Ctx, Fail, Form};
use crate::adapter::admin::view::{self, project_base, query, Nav, Pager};
use crate::adapter::admin::Admin;
use crate::adapter::http::{scope, HttpStore};
use crate::core::consent::{ContentQuery, ContentRecord, ContentType};
use crate::core::error::FieldError;
use crate::store::DEFAULT_PAGE_SIZE;
use crate::ErrorKind;

/// One list row.
#[derive(Debug)]
pub struct Row {
    pub href: String,
    pub title: String,
    pub cells: Vec<String>,
    pub modified: String,
}

#[derive(Template)]
#[template(path = "admin/content_list.html")]
struct ListPage {
    nav: Option<Nav>,
    plural: &'static str,
    singular: &'static str,
    action: String,
    new_href: Option<String>,
    filters: Vec<(String, &'static str, String)>,
    headers: Vec<&'static str>,
    rows: Vec<Row>,
    pager: Pager,
    error: Option<String>,
}

/// `GET …/content/{kind}`: filters are the content store's exact matches.
pub async fn list<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, slug)): Path<(String, String)>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CMS_READ])?;
    let k = kind(&slug)?;
    let page = view::page_of(params.get("page").map(String::as_str));
    let filters: Vec<(String, &'static str, String)> = k
        .filters
        .iter()
        .map(|(attr, label)| {
            let v = params
                .get(*attr)
                .map(|v| v.trim().to_owned())
                .unwrap_or_default();
            ((*attr).to_owned(), *label, v)
        })
        .collect();
    let mut pairs: Vec<(String, String)> = filters
        .iter()
        .filter(|(_, _, v)| !v.is_empty())
        .map(|(a, _, v)| (format!("data.{a}"), v.clone()))
        .collect();
    pairs.push(("page".into(), page.to_string()));
    pairs.push(("sort".into(), format!("data.{},asc", k.title)));
    let base = project_base(&project);
    let action = format!("{base}/content/{}", k.slug);
    let (found, error) = match ContentQuery::from_pairs(pairs) {
        Ok(q) => match admin
            .consent
            .list_content(&project, k.content_type.as_str(), &q)
            .await
        {
            Ok(found) => (Some(found), None),
            Err(e) if e.kind() == ErrorKind::BadRequest => (None, Some(e.message().to_owned())),
            Err(e) => return Err(e.into()),
        },
        Err(e) => (None, Some(e.message().to_owned())),
    };
    let (items, total) = found.map_or((Vec::new(), 0), |p| (p.items, p.total));
    let offset = ctx.session.offset;
    let rows = items
        .iter()
        .map(|r| Row {
            href: format!("{action}/{}", view::encode(&r.id)),
            title: text_of(r.data.get(k.title)),
            cells: k
                .columns
                .iter()
                .map(|(a, _)| text_of(r.data.get(*a)))
                .collect(),
            modified: view::show(r.last_modified_date, offset),
        })
        .collect();
    let filter_pairs: Vec<(&str, &str)> = filters
        .iter()
        .map(|(a, _, v)| (a.as_str(), v.as_str()))
        .collect();
    let pager = Pager::new(page, DEFAULT_PAGE_SIZE, total, |n| {
        let mut q = filter_pairs.clone();
        let n = n.to_string();
        q.push(("page", &n));
        format!("{action}{}", query(&q))
    });
    Ok(render(&ListPage {
        nav: Some(ctx.nav(Some(&project), k.slug)),
        plural: k.plural,
        singular: k.singular,
        new_href: ctx.may(scope::CMS_WRITE).then(|| format!("{action}/new")),
        action,
        filters,
        headers: k.columns.iter().map(|(_, l)| *l).collect(),
        rows,
        pager,
        error,
    }))
}

/// One input of the form.
#[derive(Debug)]
pub struct Field {
    pub name: String,
    pub id: String,
    pub label: &'static str,
    pub value: String,
    pub input: &'static str,
    pub error: Option<String>,
}

/// One version of the record, for its history.
#[derive(Debug)]
pub struct VersionRow {
    pub version: i64,
    pub revision: String,
    pub status: String,
    pub by: String,
    pub at: String,
}

#[derive(Template)]
#[template(path = "admin/content_form.html")]
struct FormPage {
    nav: Option<Nav>,
    title: String,
    action: String,
    csrf: String,
    writable: bool,
    /// Single fields, then `…En`/`…Th` pairs side by side.
    fields: Vec<Field>,
    pairs: Vec<(Field, Field)>,
    notices: Vec<(String, String)>,
    errors: Vec<String>,
    revision: Option<String>,
    confirm: Option<String>,
    versions: Vec<VersionRow>,
    back: String,
}

fn field_id(attr: &str) -> String {
    format!("data-{attr}")
}

struct FormState<'a> {
    kind: &'static Kind,
    values: &'a HashMap<String, String>,
    errors: Vec<FieldError>,
}

fn form_page(ctx: &Ctx, project: &str, st: FormState<'_>) -> FormPage {
    let mut errors = st.errors;
    let mut take = |attr: &str| {
        let path = format!("data.{attr}");
        let (mine, rest): (Vec<_>, Vec<_>) = errors
            .drain(..)
            .partition(|e| e.field == path || e.field.starts_with(&format!("{path}[")));
        errors = rest;
        (!mine.is_empty()).then(|| {
            mine.into_iter()
                .map(|e| e.message)
                .collect::<Vec<_>>()
                .join("\n")
        })
    };
    let mut fields = Vec::new();
    let mut en: HashMap<&str, Field> = HashMap::new();
    let mut pairs = Vec::new();
    for (attr, label, input) in st.kind.attributes {
        let f = Field {
            name: format!("data.{attr}"),
            id: field_id(attr),
            label,
            value: st.values.get(*attr).cloned().unwrap_or_default(),
            input: match input {
                Input::Text => "text",
                Input::Area => "area",
                Input::Number => "number",
                Input::Lines => "lines",
                Input::Status => "status",
                Input::Notice => "notice",
            },
            error: take(attr),
        };
        if let Some(stem) = attr.strip_suffix("En") {
            en.insert(stem, f);
        } else if let Some(stem) = attr.strip_suffix("Th") {
            match en.remove(stem) {
                Some(e) => pairs.push((e, f)),
                None => fields.push(f),
            }
        } else {
            fields.push(f);
        }
    }
    fields.extend(en.into_values());
    FormPage {
        nav: Some(ctx.nav(Some(project), st.kind.slug)),
        title: String::new(),
        action: String::new(),
        csrf: ctx.session.csrf.clone(),
        writable: ctx.may(scope::CMS_WRITE),
        fields,
        pairs,
        notices: Vec::new(),
        errors: errors
            .into_iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect(),
        revision: None,
        confirm: None,
        versions: Vec::new(),
        back: format!("{}/content/{}", project_base(project), st.kind.slug),
    }
}

/// The privacy notices to choose from: (id, "name (revision n)").
async fn notices<S: HttpStore>(
    admin: &Admin<S>,
    project: &str,
) -> Result<Vec<(String, String)>, Fail> {
    let q = ContentQuery::from_pairs([("size", "1000"), ("sort", "data.name,asc")])?;
    let found = admin
        .consent
        .list_content(project, ContentType::PrivacyNotice.as_str(), &q)
        .await?;
    Ok(found
        .items
        .iter()
        .map(|r| {
            (
                r.id.clone(),
                format!(
                    "{} (revision {}, {})",
                    text_of(r.data.get("name")),
                    text_of(r.data.get("revision")),
                    text_of(r.data.get("status"))
                ),
            )
        })
        .collect())
}

fn values_of(r: &ContentRecord) -> HashMap<String, String> {
    r.data
        .iter()
        .map(|(k, v)| (k.clone(), text_of(Some(v))))
        .collect()
}

/// `GET …/content/{kind}/new`.
pub async fn new_page<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, slug)): Path<(String, String)>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CMS_WRITE])?;
    let k = kind(&slug)?;
    let mut values = HashMap::new();
    if k.attributes.iter().any(|(a, _, _)| *a == "revision") {
        values.insert("revision".to_owned(), "1".to_owned());
        values.insert("status".to_owned(), "DRAFT".to_owned());
    }
    let mut page = form_page(
        &ctx,
        &project,
        FormState {
            kind: k,
            values: &values,
            errors: Vec::new(),
        },
    );
    page.title = format!("New {}", k.singular);
    page.action = format!("{}/content/{}/new", project_base(&project), k.slug);
    page.notices = notices(&admin, &project).await?;
    Ok(render(&page))
}

/// The form's attributes as content `data`, over `base` (the current
/// data on edit: attributes the form does not show are kept).
fn data_of(k: &Kind, form: &Form, base: Map<String, Value>) -> Map<String, Value> {
    let mut data = base;
    for (attr, _, input) in k.attributes {
        let raw = form.text(&format!("data.{attr}")).trim();
        let v = match input {
            _ if raw.is_empty() => Value::Null,
            Input::Number => raw
                .parse::<i64>()
                .map_or_else(|_| Value::String(raw.to_owned()), Value::from),
            Input::Lines => Value::Array(
                raw.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(|l| Value::String(l.to_owned()))
                    .collect(),
            ),
            _ => Value::String(raw.to_owned()),
        };
        if v.is_null() && !data.contains_key(*attr) {
            continue;
        }
        data.insert((*attr).to_owned(), v);
    }
    data
}

fn form_values(k: &Kind, form: &Form) -> HashMap<String, String> {
    k.attributes
        .iter()
        .map(|(a, _, _)| ((*a).to_owned(), form.text(&format!("data.{a}")).to_owned()))
        .collect()
}

/// `POST …/content/{kind}/new`.
pub async fn create<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, slug)): Path<(String, String)>,
    Extension(form): Extension<Form>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CMS_WRITE])?;
    let k = kind(&slug)?;
    let data = data_of(k, &form, Map::new());
    match admin
        .consent
        .create_content(
            &project,
            k.content_type.as_str(),
            Value::Object(data),
            &ctx.session.principal.sub,
        )
        .await
    {
        Ok(r) => {
            ctx.flash(&admin, format!("The {} was created.", k.singular), false);
            Ok(Redirect::to(&format!(
                "{}/content/{}/{}",
                project_base(&project),
                k.slug,
                view::encode(&r.id)
            ))
            .into_response())
        }
        Err(e) if e.kind() == ErrorKind::Validation => {
            let values = form_values(k, &form);
            let mut page = form_page(
                &ctx,
                &project,
                FormState {
                    kind: k,
                    values: &values,
                    errors: fields_of(&e),
                },
            );
            page.title = format!("New {}", k.singular);
            page.action = format!("{}/content/{}/new", project_base(&project), k.slug);
            page.notices = notices(&admin, &project).await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)).into_response())
        }
        Err(e) => Err(e.into()),
    }
}

/// A validation error's fields, or the error itself as one problem.
fn fields_of(e: &crate::Error) -> Vec<FieldError> {
    if e.fields().is_empty() {
        vec![FieldError::new("data", e.code(), e.message())]
    } else {
        e.fields().to_vec()
    }
}

async fn edit_form<S: HttpStore>(
    admin: &Admin<S>,
    ctx: &Ctx,
    project: &str,
    k: &'static Kind,
    record: &ContentRecord,
    values: &HashMap<String, String>,
    errors: Vec<FieldError>,
) -> Result<FormPage, Fail> {
    let mut page = form_page(
        ctx,
        project,
        FormState {
            kind: k,
            values,
            errors,
        },
    );
    page.title = format!(
        "{}: {}",
        capitalized(k.singular),
        text_of(record.data.get(k.title))
    );
    page.action = format!(
        "{}/content/{}/{}",
        project_base(project),
        k.slug,
        view::encode(&record.id)
    );
    page.revision = record.data.get("revision").map(|r| text_of(Some(r)));
    page.notices = notices(admin, project).await?;
    let versions = admin
        .consent
        .content_versions(project, k.content_type.as_str(), &record.id)
        .await?;
    page.versions = versions
        .iter()
        .rev()
        .map(|v| VersionRow {
            version: v.version,
            revision: text_of(v.data.get("revision")),
            status: text_of(v.data.get("status")),
            by: v.last_modified_by.clone(),
            at: view::show(v.last_modified_date, ctx.session.offset),
        })
        .collect();
    Ok(page)
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// `GET …/content/{kind}/{id}`: the record (read-only without `cms.w`).
pub async fn edit_page<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, slug, id)): Path<(String, String, String)>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CMS_READ])?;
    let k = kind(&slug)?;
    let record = admin
        .consent
        .content(&project, k.content_type.as_str(), &id)
        .await?;
    let values = values_of(&record);
    let page = edit_form(&admin, &ctx, &project, k, &record, &values, Vec::new()).await?;
    Ok(render(&page))
}

/// `POST …/content/{kind}/{id}`: replaces the record's data (a new
/// version); raising a published record's revision asks first.
pub async fn update<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path((project, slug, id)): Path<(String, String, String)>,
    Extension(form): Extension<Form>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CMS_WRITE])?;
    let k = kind(&slug)?;
    let current = admin
        .consent
        .content(&project, k.content_type.as_str(), &id)
        .await?;
    let data = data_of(k, &form, current.data.clone());
    let was = current.data.get("revision").and_then(Value::as_i64);
    let now = data.get("revision").and_then(Value::as_i64);
    let published = data.get("status").and_then(Value::as_str) == Some("PUBLISHED");
    let new_revision = matches!((was, now), (Some(w), Some(n)) if n > w) && published;
    if new_revision && form.get("confirm") != Some("revision") {
        let values = form_values(k, &form);
        let mut page = edit_form(&admin, &ctx, &project, k, &current, &values, Vec::new()).await?;
        page.confirm = Some(format!(
            "Saving revision {} asks every data subject who accepted an earlier revision to accept again{}.",
            now.unwrap_or_default(),
            if k.content_type == ContentType::PrivacyNotice { " (every consent that refers to this notice is offered again)" } else { "" }
        ));
        return Ok(render(&page));
    }
    match admin
        .consent
        .replace_content(
            &project,
            k.content_type.as_str(),
            &id,
            Value::Object(data),
            &ctx.session.principal.sub,
        )
        .await
    {
        Ok(r) => {
            let message = if new_revision {
                format!(
                    "Revision {} saved: data subjects will be asked to accept again.",
                    now.unwrap_or_default()
                )
            } else {
                format!("The {} was saved (version {}).", k.singular, r.version)
            };
            ctx.flash(&admin, message, false);
            Ok(Redirect::to(&format!(
                "{}/content/{}/{}",
                project_base(&project),
                k.slug,
                view::encode(&id)
            ))
            .into_response())
        }
        Err(e) if e.kind() == ErrorKind::Validation => {
            let values = form_values(k, &form);
            let page =
                edit_form(&admin, &ctx, &project, k, &current, &values, fields_of(&e)).await?;
            Ok((StatusCode::UNPROCESSABLE_ENTITY, render(&page)).into_response())
        }
        Err(e) => Err(e.into()),
    }
}
