//! Erasing a data subject (GDPR Art. 17, PDPA s.33) from the console:
//! asked first, then `ConsentService::erase_subject`, and the page shows
//! what was erased and what was kept as proof. Scope `consent.admin`, as
//! the API's erasure route.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::Extension;

use crate::adapter::admin::guard::{render, Ctx, Fail, Form};
use crate::adapter::admin::view::{project_base, query, Nav};
use crate::adapter::admin::Admin;
use crate::adapter::http::{scope, HttpStore};
use crate::core::consent::erasure::ErasureReport;

#[derive(Template)]
#[template(path = "admin/erase.html")]
struct ErasePage {
    nav: Option<Nav>,
    csrf: String,
    subject: String,
    /// Where the form posts.
    action: String,
    /// The subject's lookup page.
    back: String,
    /// How many records the subject has (acceptance versions and purpose
    /// events).
    records: usize,
    /// After the erasure: what it did.
    report: Option<ErasureReport>,
}

fn subject_of(form_or_query: Option<&str>) -> Result<String, Fail> {
    match form_or_query.map(str::trim) {
        Some(s) if !s.is_empty() => Ok(s.to_owned()),
        _ => Err(Fail::BadRequest("Name the data subject to erase.".into())),
    }
}

/// `GET …/subjects/erase?subject=`: asks first.
pub async fn erase_page<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path(project): Path<String>,
    Query(params): Query<std::collections::HashMap<String, String>>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CONSENT_ADMIN])?;
    let subject = subject_of(params.get("subject").map(String::as_str))?;
    let records = admin.consent.history(&project, &subject).await?.len();
    let base = project_base(&project);
    Ok(render(&ErasePage {
        nav: Some(ctx.nav(Some(&project), "subjects")),
        csrf: ctx.session.csrf.clone(),
        action: format!("{base}/subjects/erase"),
        back: format!("{base}/subjects{}", query(&[("subject", &subject)])),
        subject,
        records,
        report: None,
    }))
}

/// `POST …/subjects/erase`: erases, then shows the report. Erasing again
/// changes nothing more (the records already name the pseudonym).
pub async fn erase<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path(project): Path<String>,
    Extension(form): Extension<Form>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[scope::CONSENT_ADMIN])?;
    let subject = subject_of(form.get("subject"))?;
    let report = admin.consent.erase_subject(&project, &subject).await?;
    let base = project_base(&project);
    Ok(render(&ErasePage {
        nav: Some(ctx.nav(Some(&project), "subjects")),
        csrf: ctx.session.csrf.clone(),
        action: format!("{base}/subjects/erase"),
        back: format!(
            "{base}/subjects{}",
            query(&[("subject", &report.pseudonym)])
        ),
        subject,
        records: 0,
        report: Some(report),
    }))
}
