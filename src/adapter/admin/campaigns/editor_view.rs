//! The editor's page: the views of a [`Draft`] with every problem placed at
//! its input (or, for a problem of a whole part, at that part).

use askama::Template;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::form::{CondDraft, DataDraft, Draft};
use crate::adapter::admin::guard::{render, Ctx};
use crate::adapter::admin::view::{self, project_base, Nav};
use crate::core::campaign::{Campaign, Op};
use crate::core::error::FieldError;

/// One input: its name (the field path), HTML id, value and error.
#[derive(Debug, Clone)]
pub struct F {
    pub name: String,
    pub id: String,
    pub value: String,
    pub error: Option<String>,
}

/// The problems still to place, by field path.
struct Errors(Vec<FieldError>);

impl Errors {
    /// The messages of exactly `path`.
    fn take(&mut self, path: &str) -> Option<String> {
        let (mine, rest): (Vec<_>, Vec<_>) = self.0.drain(..).partition(|e| e.field == path);
        self.0 = rest;
        (!mine.is_empty()).then(|| {
            mine.into_iter()
                .map(|e| e.message)
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    /// The messages of `path` and everything under it not placed yet.
    fn within(&mut self, path: &str) -> Vec<String> {
        let under = |f: &str| {
            f == path
                || f.strip_prefix(path)
                    .is_some_and(|r| r.starts_with('.') || r.starts_with('['))
        };
        let (mine, rest): (Vec<_>, Vec<_>) = self.0.drain(..).partition(|e| under(&e.field));
        self.0 = rest;
        mine.into_iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect()
    }

    fn field(&mut self, name: String, value: &str) -> F {
        F {
            id: name.replace(['[', ']', '.'], "-").replace("--", "-"),
            error: self.take(&name),
            value: value.to_owned(),
            name,
        }
    }
}

/// A condition row.
#[derive(Debug)]
pub struct CondView {
    pub kind: F,
    pub attribute: F,
    pub op: F,
    pub value: F,
    pub value_type: F,
    pub note: F,
    /// The hidden `resolveAction` input's name, when it is set.
    pub resolve_action: Option<String>,
    pub ops: Vec<(&'static str, bool)>,
    pub remove: String,
    pub errors: Vec<String>,
}

/// A `when` group.
#[derive(Debug)]
pub struct GroupView {
    pub match_kind: F,
    pub conditions: Vec<CondView>,
    pub add: String,
    pub remove: String,
    pub errors: Vec<String>,
}

/// A benefit data item.
#[derive(Debug)]
pub struct DataView {
    pub attribute: F,
    pub value: F,
    pub is_formula: bool,
    pub formula_name: String,
    pub hidden: Vec<(String, String)>,
    pub remove: String,
    pub errors: Vec<String>,
}

/// A benefit.
#[derive(Debug)]
pub struct ThenView {
    pub action: F,
    pub action_ref: F,
    pub internal_action: bool,
    pub internal_name: String,
    pub capped: bool,
    pub capped_name: String,
    pub cap_max: F,
    pub cap_scope: F,
    pub cap_attribute: F,
    pub allocate: F,
    pub data: Vec<DataView>,
    pub add: String,
    pub remove: String,
    pub errors: Vec<String>,
}

/// A rule.
#[derive(Debug)]
pub struct RuleView {
    pub n: usize,
    pub id: F,
    pub name: F,
    pub description: F,
    pub then_operator: F,
    pub valid_from: F,
    pub valid_to: F,
    pub groups: Vec<GroupView>,
    pub benefits: Vec<ThenView>,
    pub add_group: String,
    pub add_benefit: String,
    pub remove: String,
    pub errors: Vec<String>,
}

/// A quota.
#[derive(Debug)]
pub struct QuotaView {
    pub id: F,
    pub key: F,
    pub value: F,
    pub value_field: F,
    pub description: F,
    pub window: F,
    pub remove: String,
    pub errors: Vec<String>,
}

/// What a stale save shows: the version now stored.
#[derive(Debug)]
pub struct Stale {
    pub current: i64,
    pub save_over: String,
    pub reload: String,
}

#[derive(Template)]
#[template(path = "admin/editor.html")]
struct EditorPage {
    nav: Option<Nav>,
    title: String,
    action: String,
    csrf: String,
    base: String,
    /// The saved campaign's page links, when editing one.
    saved: Option<SavedLinks>,
    offset: String,
    name: F,
    description: F,
    image_url: F,
    ref_code: F,
    start: F,
    end: F,
    status: F,
    priority: F,
    channel: F,
    group: F,
    exclusive: bool,
    stop_after: bool,
    stacking_group: F,
    time_zone: F,
    status_schedule: F,
    version: String,
    quotas: Vec<QuotaView>,
    rules: Vec<RuleView>,
    other_errors: Vec<String>,
    error_count: usize,
    stale: Option<Stale>,
}

/// Links of a saved campaign.
#[derive(Debug)]
pub struct SavedLinks {
    pub try_it: String,
    pub quotas: String,
    pub codes: String,
    pub revisions: String,
    pub duplicate: String,
    pub delete: String,
    pub version: i64,
    pub modified: String,
    pub modified_by: String,
}

const NUMBER_OPS: [&str; 10] = [
    "eq",
    "neq",
    "gt",
    "gte",
    "lt",
    "lte",
    "in",
    "not_in",
    "contains",
    "not_contains",
];

/// The ops offered for a value type: NUMBER has no regex ops (the one
/// selected is always offered, so nothing typed is lost).
fn ops_for(value_type: &str, selected: &str) -> Vec<(&'static str, bool)> {
    Op::WIRE
        .iter()
        .copied()
        .filter(|op| value_type != "NUMBER" || NUMBER_OPS.contains(op) || *op == selected)
        .map(|op| (op, op == selected))
        .collect()
}

fn cond_view(e: &mut Errors, p: &str, c: &CondDraft, remove: String) -> CondView {
    let view = CondView {
        kind: e.field(format!("{p}.type"), &c.kind),
        attribute: e.field(format!("{p}.attribute"), &c.attribute),
        op: e.field(format!("{p}.op"), &c.op),
        value: e.field(format!("{p}.value"), &c.value),
        value_type: e.field(format!("{p}.valueType"), &c.value_type),
        note: e.field(format!("{p}.note"), &c.note),
        resolve_action: c.resolve_action.then(|| format!("{p}.resolveAction")),
        ops: ops_for(&c.value_type, &c.op),
        remove,
        errors: Vec::new(),
    };
    CondView {
        errors: e.within(p),
        ..view
    }
}

fn data_view(e: &mut Errors, p: &str, d: &DataDraft, remove: String) -> DataView {
    let hidden = [
        ("type", &d.kind),
        ("op", &d.op),
        ("valueType", &d.value_type),
        ("note", &d.note),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(k, v)| (format!("{p}.{k}"), v.clone()))
    .chain(
        d.resolve_action
            .then(|| (format!("{p}.resolveAction"), "true".to_owned())),
    )
    .collect();
    let view = DataView {
        attribute: e.field(format!("{p}.attribute"), &d.attribute),
        value: e.field(format!("{p}.value"), &d.value),
        is_formula: d.is_formula,
        formula_name: format!("{p}.isFormula"),
        hidden,
        remove,
        errors: Vec::new(),
    };
    DataView {
        errors: e.within(p),
        ..view
    }
}

/// Builds the views of a draft, placing every problem at its input (or,
/// for a problem of a whole part, at that part).
fn views(draft: &Draft, errors: Vec<FieldError>) -> (EditorPage, usize) {
    let count = errors.len();
    let mut e = Errors(errors);
    let rules = draft
        .rules
        .iter()
        .enumerate()
        .map(|(r, rule)| {
            let rp = format!("rules[{r}]");
            let groups = rule
                .when
                .iter()
                .enumerate()
                .map(|(g, group)| {
                    let gp = format!("{rp}.when[{g}]");
                    let conditions = group
                        .conditions
                        .iter()
                        .enumerate()
                        .map(|(c, cond)| {
                            cond_view(
                                &mut e,
                                &format!("{gp}.conditions[{c}]"),
                                cond,
                                format!("remove-condition:{r}:{g}:{c}"),
                            )
                        })
                        .collect();
                    let match_kind = e.field(format!("{gp}.match"), &group.match_kind);
                    GroupView {
                        match_kind,
                        conditions,
                        add: format!("add-condition:{r}:{g}"),
                        remove: format!("remove-group:{r}:{g}"),
                        errors: e.within(&gp),
                    }
                })
                .collect();
            let benefits = rule
                .then
                .iter()
                .enumerate()
                .map(|(b, then)| {
                    let bp = format!("{rp}.then[{b}]");
                    let data = then
                        .data
                        .iter()
                        .enumerate()
                        .map(|(d, item)| {
                            data_view(
                                &mut e,
                                &format!("{bp}.data[{d}]"),
                                item,
                                format!("remove-data:{r}:{b}:{d}"),
                            )
                        })
                        .collect();
                    ThenView {
                        action: e.field(format!("{bp}.action"), &then.action),
                        action_ref: e.field(format!("{bp}.actionRef"), &then.action_ref),
                        internal_action: then.internal_action,
                        internal_name: format!("{bp}.internalAction"),
                        capped: then.capped,
                        capped_name: format!("{bp}.cap"),
                        cap_max: e.field(format!("{bp}.cap.max"), &then.cap_max),
                        cap_scope: e.field(format!("{bp}.cap.scope"), &then.cap_scope),
                        cap_attribute: e.field(format!("{bp}.cap.attribute"), &then.cap_attribute),
                        allocate: e.field(format!("{bp}.allocate"), &then.allocate),
                        data,
                        add: format!("add-data:{r}:{b}"),
                        remove: format!("remove-benefit:{r}:{b}"),
                        errors: e.within(&bp),
                    }
                })
                .collect();
            RuleView {
                n: r + 1,
                id: e.field(format!("{rp}.id"), &rule.id),
                name: e.field(format!("{rp}.name"), &rule.name),
                description: e.field(format!("{rp}.description"), &rule.description),
                then_operator: e.field(format!("{rp}.thenOperator"), &rule.then_operator),
                valid_from: e.field(format!("{rp}.validFrom"), &rule.valid_from),
                valid_to: e.field(format!("{rp}.validTo"), &rule.valid_to),
                groups,
                benefits,
                add_group: format!("add-group:{r}"),
                add_benefit: format!("add-benefit:{r}"),
                remove: format!("remove-rule:{r}"),
                errors: e.within(&rp),
            }
        })
        .collect();
    let quotas = draft
        .quotas
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let p = format!("quotas[{i}]");
            QuotaView {
                id: e.field(format!("{p}.id"), &q.id),
                key: e.field(format!("{p}.key"), &q.key),
                value: e.field(format!("{p}.value"), &q.value),
                value_field: e.field(format!("{p}.valueField"), &q.value_field),
                description: e.field(format!("{p}.description"), &q.description),
                window: e.field(format!("{p}.window"), &q.window),
                remove: format!("remove-quota:{i}"),
                errors: e.within(&p),
            }
        })
        .collect();
    let page = EditorPage {
        nav: None,
        title: String::new(),
        action: String::new(),
        csrf: String::new(),
        base: String::new(),
        saved: None,
        offset: String::new(),
        name: e.field("name".into(), &draft.name),
        description: e.field("description".into(), &draft.description),
        image_url: e.field("imageUrl".into(), &draft.image_url),
        ref_code: e.field("refCode".into(), &draft.ref_code),
        start: e.field("startDate".into(), &draft.start),
        end: e.field("endDate".into(), &draft.end),
        status: e.field("status".into(), &draft.status),
        priority: e.field("priority".into(), &draft.priority),
        channel: e.field("channel".into(), &draft.channel),
        group: e.field("groupName".into(), &draft.group),
        exclusive: draft.exclusive,
        stop_after: draft.stop_after,
        stacking_group: e.field("stacking.group".into(), &draft.stacking_group),
        time_zone: e.field("timeZone".into(), &draft.time_zone),
        status_schedule: e.field("statusSchedule".into(), &draft.status_schedule),
        version: draft.version.clone(),
        quotas,
        rules,
        other_errors: Vec::new(),
        error_count: count,
        stale: None,
    };
    let other_errors =
        e.0.into_iter()
            .map(|f| format!("{}: {}", f.field, f.message))
            .collect();
    (
        EditorPage {
            other_errors,
            ..page
        },
        count,
    )
}

/// How the page around the form is set up.
pub struct Frame<'a> {
    pub project: &'a str,
    pub title: String,
    pub action: String,
    pub saved: Option<&'a Campaign>,
    pub stale: Option<Stale>,
}

/// The editor page of `draft` with `errors` placed at their inputs; its
/// status says what happened (422 problems, 409 stale, else 200).
pub fn page(ctx: &Ctx, frame: Frame<'_>, draft: &Draft, errors: Vec<FieldError>) -> Response {
    let (mut page, count) = views(draft, errors);
    let base = project_base(frame.project);
    page.nav = Some(ctx.nav(Some(frame.project), "campaigns"));
    page.title = frame.title;
    page.action = frame.action;
    page.csrf = ctx.session.csrf.clone();
    page.offset = view::offset_label(ctx.session.offset);
    page.saved = frame.saved.map(|c| {
        let href = format!("{base}/campaigns/{}", c.id);
        SavedLinks {
            try_it: format!("{href}/try"),
            quotas: format!("{href}/quotas"),
            codes: format!("{href}/codes"),
            revisions: format!("{href}/revisions"),
            duplicate: format!("{href}/duplicate"),
            delete: format!("{href}/delete"),
            version: c.version,
            modified: view::show(c.last_modified_date, ctx.session.offset),
            modified_by: c.last_modified_by.clone(),
        }
    });
    page.base = base;
    let status = if frame.stale.is_some() {
        StatusCode::CONFLICT
    } else if count > 0 {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    page.stale = frame.stale;
    (status, render(&page)).into_response()
}
