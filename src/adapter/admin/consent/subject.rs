//! Data-subject lookup: what a subject has agreed to now, per application
//! (and what they are asked again), every record as a timeline, and the
//! state at a chosen instant — from `ConsentService::history`,
//! `state_at` and `to_accept`.

use std::collections::{BTreeSet, HashMap};

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use chrono::{DateTime, FixedOffset, Utc};

use crate::adapter::admin::guard::{render, Ctx, Fail};
use crate::adapter::admin::view::{self, project_base, Nav, CONSENT_AUDIT};
use crate::adapter::admin::Admin;
use crate::adapter::http::HttpStore;
use crate::core::consent::{ContentType, HistoryEntry, Reason, SubjectState};

/// One entry of the timeline.
#[derive(Debug)]
pub struct Event {
    pub at: String,
    /// `accepted`, `withdrawn`, `expired` or `asked`.
    pub class: &'static str,
    pub title: String,
    pub details: Vec<String>,
    sort: DateTime<Utc>,
}

/// What a subject had agreed to in one application at one instant.
#[derive(Debug)]
pub struct StateView {
    pub application: String,
    pub at: String,
    pub consents: Vec<String>,
    pub purposes: Vec<String>,
    /// Consents the subject is asked to accept (again), with why.
    pub asked: Vec<String>,
}

#[derive(Template)]
#[template(path = "admin/subject.html")]
struct SubjectPage {
    nav: Option<Nav>,
    action: String,
    subject: String,
    app: String,
    at: String,
    offset: String,
    searched: bool,
    current: Vec<StateView>,
    at_state: Vec<StateView>,
    timeline: Vec<Event>,
    error: Option<String>,
    /// The erasure page of the subject, for a token with `consent.admin`.
    erase_href: Option<String>,
}

fn show_opt(t: Option<DateTime<Utc>>, offset: FixedOffset, none: &str) -> String {
    t.map_or_else(|| none.to_owned(), |t| view::show(t, offset))
}

fn state_view(s: &SubjectState, names: &HashMap<String, String>, offset: FixedOffset) -> StateView {
    let name = |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_owned());
    StateView {
        application: s.application.clone(),
        at: view::show(s.at, offset),
        consents: s
            .consents
            .iter()
            .map(|c| {
                format!(
                    "{} — revision {}, accepted {}, expires {}, notice {} revision {}, purposes: {}",
                    name(&c.consent_id),
                    c.consent_revision.map_or_else(|| "?".into(), |r| r.to_string()),
                    show_opt(c.acceptance_date, offset, "?"),
                    show_opt(c.expired_date, offset, "never"),
                    c.privacy_notice_id.as_deref().map_or_else(|| "?".into(), &name),
                    c.privacy_notice_revision.map_or_else(|| "?".into(), |r| r.to_string()),
                    c.purposes.join(", ")
                )
            })
            .collect(),
        purposes: s
            .purposes
            .iter()
            .map(|p| {
                format!(
                    "{} — since {}, expires {} ({})",
                    p.code,
                    view::show(p.since, offset),
                    show_opt(p.expired_date, offset, "never"),
                    p.source.as_str()
                )
            })
            .collect(),
        asked: Vec::new(),
    }
}

/// The timeline entries of a subject's records.
fn timeline(
    history: &[HistoryEntry],
    names: &HashMap<String, String>,
    now: DateTime<Utc>,
    offset: FixedOffset,
) -> Vec<Event> {
    let name = |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_owned());
    let mut out = Vec::new();
    for entry in history {
        match entry {
            HistoryEntry::ConsentAcceptance(r) => {
                let a = crate::core::consent::ConsentAcceptance::from_record(r);
                let withdrawn = a.status.as_str() == "WITHDRAWN";
                out.push(Event {
                    at: view::show(r.last_modified_date, offset),
                    sort: r.last_modified_date,
                    class: if withdrawn { "withdrawn" } else { "accepted" },
                    title: format!(
                        "Consent {} {} (revision {}){}",
                        name(&a.consent_id),
                        if withdrawn { "withdrawn" } else { "accepted" },
                        a.consent_revision
                            .map_or_else(|| "?".into(), |v| v.to_string()),
                        if r.version > 1 {
                            format!(", record version {}", r.version)
                        } else {
                            String::new()
                        }
                    ),
                    details: vec![
                        format!("application {}", a.consent_application),
                        format!(
                            "privacy notice {} revision {}",
                            a.privacy_notice_id
                                .as_deref()
                                .map_or_else(|| "?".into(), &name),
                            a.privacy_notice_revision
                                .map_or_else(|| "?".into(), |v| v.to_string())
                        ),
                        format!("purposes: {}", a.purposes.join(", ")),
                        format!(
                            "accepted {}, expires {}",
                            view::show(a.acceptance_date, offset),
                            show_opt(a.expired_date, offset, "never")
                        ),
                        format!("device: {} {} {}", a.user_agent, a.model, a.country),
                    ],
                });
                if let Some(exp) = a.expired_date.filter(|e| *e <= now && !withdrawn) {
                    out.push(Event {
                        at: view::show(exp, offset),
                        sort: exp,
                        class: "expired",
                        title: format!("Consent {} expired", name(&a.consent_id)),
                        details: Vec::new(),
                    });
                }
            }
            HistoryEntry::Purpose(e) => {
                let withdrawn = e.status.as_str() == "WITHDRAWN";
                out.push(Event {
                    at: view::show(e.recorded_at, offset),
                    sort: e.recorded_at,
                    class: if withdrawn { "withdrawn" } else { "accepted" },
                    title: format!(
                        "Purpose {} {} in {}",
                        e.purpose_code,
                        if withdrawn { "withdrawn" } else { "accepted" },
                        e.app
                    ),
                    details: vec![format!(
                        "accepted {}, expires {}",
                        show_opt(e.acceptance_date, offset, "never"),
                        show_opt(e.expired_date, offset, "never")
                    )],
                });
                if let Some(exp) = e.expired_date.filter(|x| *x <= now && !withdrawn) {
                    out.push(Event {
                        at: view::show(exp, offset),
                        sort: exp,
                        class: "expired",
                        title: format!("Purpose {} expired", e.purpose_code),
                        details: Vec::new(),
                    });
                }
            }
        }
    }
    out
}

fn reason_text(r: Reason) -> &'static str {
    match r {
        Reason::New => "never accepted",
        Reason::NewRevision => "asked again: a new revision",
        Reason::NewNoticeRevision => "asked again: a new privacy notice revision",
        Reason::Expired => "asked again: the acceptance expired",
        Reason::Withdrawn => "asked again: withdrawn",
    }
}

/// `GET …/subjects?subject=&app=&at=`.
pub async fn lookup<S: HttpStore>(
    State(admin): State<Admin<S>>,
    ctx: Ctx,
    Path(project): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, Fail> {
    ctx.check(&project, &[CONSENT_AUDIT])?;
    let p = |k: &str| {
        params
            .get(k)
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    };
    let (subject, app, at) = (
        params.get("subject").cloned().unwrap_or_default(),
        p("app"),
        p("at"),
    );
    let offset = ctx.session.offset;
    let mut page = SubjectPage {
        nav: Some(ctx.nav(Some(&project), "subjects")),
        action: format!("{}/subjects", project_base(&project)),
        subject: subject.clone(),
        app: app.clone(),
        at: at.clone(),
        offset: view::offset_label(offset),
        searched: !subject.is_empty(),
        current: Vec::new(),
        at_state: Vec::new(),
        timeline: Vec::new(),
        error: None,
        erase_href: None,
    };
    if subject.is_empty() {
        return Ok(render(&page));
    }
    let at = match view::parse_input(&at, offset) {
        Ok(t) => t,
        Err(e) => {
            page.error = Some(format!("At: {e}"));
            None
        }
    };
    let consent = &admin.consent;
    let history = consent.history(&project, &subject).await?;
    let mut apps: BTreeSet<String> = history
        .iter()
        .map(|h| match h {
            HistoryEntry::ConsentAcceptance(r) => {
                crate::core::consent::ConsentAcceptance::from_record(r).consent_application
            }
            HistoryEntry::Purpose(e) => e.app.clone(),
        })
        .filter(|a| !a.is_empty())
        .collect();
    if !app.is_empty() {
        apps = BTreeSet::from([app.clone()]);
    }
    // Names of the consents and notices the records mention.
    let mut names = HashMap::new();
    for h in &history {
        if let HistoryEntry::ConsentAcceptance(r) = h {
            let a = crate::core::consent::ConsentAcceptance::from_record(r);
            for (t, id) in [
                (ContentType::Consent, Some(a.consent_id)),
                (ContentType::PrivacyNotice, a.privacy_notice_id),
            ] {
                let Some(id) = id else { continue };
                if names.contains_key(&id) {
                    continue;
                }
                if let Ok(rec) = consent.content(&project, t.as_str(), &id).await {
                    let n = rec.str("name").unwrap_or(&id).to_owned();
                    names.insert(id, n);
                }
            }
        }
    }
    let now = admin.campaigns.clock().now();
    let mut events = timeline(&history, &names, now, offset);
    for a in &apps {
        let state = consent.state_at(&project, &subject, a, now).await?;
        let mut v = state_view(&state, &names, offset);
        for t in consent.to_accept(&project, a, &subject).await? {
            v.asked.push(format!(
                "{} (revision {}): {}",
                t.consent.name,
                t.consent.revision,
                reason_text(t.reason)
            ));
            if t.reason == Reason::NewRevision {
                if let Ok(rec) = consent
                    .content(&project, ContentType::Consent.as_str(), &t.consent.id)
                    .await
                {
                    events.push(Event {
                        at: view::show(rec.last_modified_date, offset),
                        sort: rec.last_modified_date,
                        class: "asked",
                        title: format!(
                            "Re-consent asked: {} is now at revision {}",
                            t.consent.name, t.consent.revision
                        ),
                        details: Vec::new(),
                    });
                }
            }
        }
        page.current.push(v);
        if let Some(at) = at {
            let then = consent.state_at(&project, &subject, a, at).await?;
            page.at_state.push(state_view(&then, &names, offset));
        }
    }
    events.sort_by_key(|e| e.sort);
    if !history.is_empty() && ctx.may(crate::adapter::http::scope::CONSENT_ADMIN) {
        page.erase_href = Some(format!(
            "{}/subjects/erase{}",
            project_base(&project),
            view::query(&[("subject", &subject)])
        ));
    }
    page.timeline = events;
    Ok(render(&page))
}
