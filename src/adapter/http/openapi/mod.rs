//! The OpenAPI 3.1 document, generated from the code with utoipa: the
//! paths from the handlers' `#[utoipa::path]` attributes, the schemas from
//! the domain types (`ToSchema`, derived under the `http` feature), plus the
//! bearer security scheme and the problem responses every route may give
//! ([`document`]), then made exact where derive cannot say what the server
//! does (`exact`: required fields, decimals, parameter bounds).

mod exact;

use std::sync::OnceLock;

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use utoipa::OpenApi;

use super::error::{Problem, PROBLEM_JSON};
use super::{
    campaign, codes, consent, content, evidence, files, holds, ops, retention, revisions, webhooks,
};
use crate::core::error::{Appears, ErrorCode, ErrorKind};

/// The OpenAPI 3.1 document of every route.
///
/// Generated from the code: every route the router serves, its scopes,
/// request and response schemas, and every status it may answer. No token.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", content_type = "application/json")),
)]
pub(crate) async fn openapi_json() -> Response {
    static DOC: OnceLock<String> = OnceLock::new();
    let doc =
        DOC.get_or_init(|| serde_json::to_string(&document()).unwrap_or_else(|_| "{}".to_owned()));
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        doc.clone(),
    )
        .into_response()
}

/// The OpenAPI document of the router.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Accord",
        description = "Consent and promotions: the consent application-facing routes (bff), the content store (cms), campaigns (search, redeem, administration) and operations. Every route except the operations routes needs `Authorization: Bearer <JWT>` with the scopes listed per operation and the path's `projId` in the token's `projects` claim (or `[\"*\"]`). Errors are RFC 9457 problem details. Lists are bare JSON arrays with the total in `X-Total-Count`.",
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0")
    ),
    servers((url = "http://127.0.0.1:8080", description = "The server as `cargo run --release` starts it; use your deployment's address (and its prefix, when the router is nested)")),
    paths(
        consent::to_accept,
        consent::privacy_notice,
        consent::accept_consent,
        consent::purpose_options,
        consent::accept_purpose,
        consent::withdraw_purpose,
        content::list_content,
        content::create_content,
        content::get_content,
        content::replace_content,
        evidence::content_versions,
        evidence::content_version,
        files::upload_file,
        files::get_file,
        evidence::subject_history,
        evidence::subject_state,
        evidence::export_subject,
        evidence::erase_subject,
        evidence::receipt,
        evidence::jwks,
        evidence::ledger,
        evidence::verify_ledger,
        retention::expired_acceptances,
        retention::purge,
        campaign::search,
        campaign::redeem,
        campaign::cancel_redemption,
        campaign::list_redemptions,
        holds::place_hold,
        holds::get_hold,
        holds::confirm_hold,
        holds::release_hold,
        campaign::list_campaigns,
        campaign::create_campaign,
        campaign::get_campaign,
        campaign::update_campaign,
        campaign::delete_campaign,
        campaign::quota_usage,
        codes::list_codes,
        codes::generate_codes,
        codes::import_codes,
        codes::export_codes,
        codes::deactivate_code,
        codes::activate_code,
        codes::code_lookup,
        revisions::list_revisions,
        revisions::get_revision,
        revisions::diff_revisions,
        revisions::restore_revision,
        webhooks::list_webhooks,
        webhooks::create_webhook,
        webhooks::get_webhook,
        webhooks::update_webhook,
        webhooks::delete_webhook,
        webhooks::list_deliveries,
        webhooks::get_delivery,
        webhooks::redeliver,
        ops::healthz,
        ops::readyz,
        openapi_json,
    ),
    components(schemas(
        Problem,
        crate::FieldError,
        crate::core::error::Span,
        ops::Health,
        crate::core::consent::ReducedEnvelope,
        content::ContentTypeName,
        crate::core::campaign::CampaignStatus,
    )),
        tags(
        (name = "consent", description = "Application-facing consent routes"),
        (name = "content store", description = "Privacy notices, consents, acceptances and the purpose catalogue as content records"),
        (name = "consent evidence", description = "A data subject's consent history and state at an instant (scope consent.audit)"),
        (name = "campaign", description = "Search, redeem, cancel, redemptions"),
        (name = "campaign admin", description = "Campaign administration and quota usage"),
        (name = "campaign codes", description = "A campaign's code pool: generate, import, export, list, deactivate; look a code up"),
        (name = "events", description = "Webhook endpoints, their deliveries and redelivery (scope events.admin)"),
        (name = "operations", description = "Health, readiness, this document"),
    )
)]
pub(crate) struct ApiDoc;

/// The problem response of an error class: its component name, which
/// operations may give it and when (`None`: no shared response, as a 405
/// only answers a method no operation has, and the operations that may
/// conflict say so in their own responses). The codes of each
/// class come from the catalogue ([`ErrorCode`]).
fn response_of(kind: ErrorKind) -> Option<(&'static str, When, &'static str)> {
    Some(match kind {
        ErrorKind::BadRequest => ("BadRequest", When::Bearer, "Malformed JSON, a value of the wrong type (errors name the field), or a bad query parameter"),
        ErrorKind::Unauthorized => ("Unauthorized", When::Bearer, "Missing, malformed, badly signed or expired token; the WWW-Authenticate header says which"),
        ErrorKind::Forbidden => ("Forbidden", When::Bearer, "The token lacks a scope of the route, or the path's project is not in its projects claim"),
        ErrorKind::NotFound => ("NotFound", When::Bearer, "No such resource in this project"),
        ErrorKind::Timeout => ("RequestTimeout", When::Always, "The request head or body did not arrive in time; the connection is closed"),
        // A 405 answers a method no operation has; the operations that
        // may conflict document their 409 themselves.
        ErrorKind::MethodNotAllowed | ErrorKind::Conflict => return None,
        ErrorKind::LimitExceeded => ("ContentTooLarge", When::Bearer, "Body over 1 MiB, or a request over a size or work limit"),
        ErrorKind::UriTooLong => ("UriTooLong", When::Always, "The request target (path and query) is longer than the limit"),
        ErrorKind::UnsupportedMediaType => ("UnsupportedMediaType", When::Body, "A body without Content-Type: application/json"),
        ErrorKind::Validation => ("UnprocessableContent", When::Bearer, "Semantic validation failed; errors lists every problem with its field path"),
        ErrorKind::RateLimited => ("TooManyRequests", When::Bearer, "A rate limit of the project or of the token is reached (only when the server sets limits); retry after Retry-After seconds"),
        ErrorKind::HeaderFieldsTooLarge => ("RequestHeaderFieldsTooLarge", When::Always, "The request head has too many or too large header fields"),
        ErrorKind::Internal => ("InternalError", When::Always, "A bug; details are logged, never sent"),
        ErrorKind::Unavailable => ("Unavailable", When::Always, "The store is unreachable, or the server is at its connection limit; retry after Retry-After seconds"),
    })
}

/// One problem response: status, component name, description, when.
struct ProblemResponse {
    status: String,
    name: &'static str,
    description: String,
    when: When,
}

/// The problem responses, one per error class, each listing its codes.
fn problem_responses() -> Vec<ProblemResponse> {
    ErrorKind::ALL
        .iter()
        .filter_map(|&kind| {
            let (name, when, summary) = response_of(kind)?;
            let codes: Vec<String> = ErrorCode::ALL
                .iter()
                .filter(|c| c.kind() == kind && c.appears().as_problem())
                .map(|c| format!("`{c}`"))
                .collect();
            Some(ProblemResponse {
                status: kind.status().to_string(),
                name,
                description: format!("{summary}. Codes: {} (docs/errors.md).", codes.join(", ")),
                when,
            })
        })
        .collect()
}

/// Which operations may give a problem status.
#[derive(Clone, Copy, PartialEq, Eq)]
enum When {
    /// Every operation: the server's refusals before routing, and bugs.
    Always,
    /// Operations that need a token.
    Bearer,
    /// Operations with a request body.
    Body,
}

/// The `code` enums of the problem and field error schemas, from the
/// catalogue.
fn add_codes(components: &mut Value) {
    let codes = |keep: fn(Appears) -> bool| -> Vec<&'static str> {
        ErrorCode::ALL
            .iter()
            .filter(|c| keep(c.appears()))
            .map(|c| c.as_str())
            .collect()
    };
    let problem_code = &mut components["schemas"]["Problem"]["properties"]["code"];
    problem_code["enum"] = json!(codes(Appears::as_problem));
    problem_code["description"] = json!(
        "Stable code clients may match on; docs/errors.md lists each with its status and meaning."
    );
    let field_code = &mut components["schemas"]["FieldError"]["properties"]["code"];
    field_code["enum"] = json!(codes(Appears::as_field));
    field_code["description"] =
        json!("Stable code of the problem with this field; docs/errors.md lists each.");
}

/// The document as served: the derived one, with the security scheme, the
/// shared problem responses and the document's own schema added, then made
/// exact (see `exact`). Built as JSON: utoipa's model does not read every
/// schema it writes back in.
pub(crate) fn document() -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_default();
    add_common(&mut doc);
    exact::make_exact(&mut doc);
    doc
}

fn add_common(doc: &mut Value) {
    let components = &mut doc["components"];
    components["securitySchemes"]["bearer"] = json!({
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": "A JWT (HS256, RS256 or ES256, as configured) with sub, exp, scope (space-separated) and projects (array of project ids, or [\"*\"]). The scopes an operation needs are listed in its security requirement.",
    });
    add_codes(components);
    let problems = problem_responses();
    for problem in &problems {
        let mut response = json!({"description": problem.description, "content": {}});
        response["content"][PROBLEM_JSON] =
            json!({"schema": {"$ref": "#/components/schemas/Problem"}});
        match problem.status.as_str() {
            "401" => {
                response["headers"] = json!({"WWW-Authenticate": {
                    "description": "Bearer, with error=\"invalid_token\" and an error_description when a token was sent (RFC 6750)",
                    "required": true,
                    "schema": {"type": "string"},
                }});
            }
            "429" => {
                response["headers"] = json!({"Retry-After": {
                    "description": "Whole seconds until a request would be let through",
                    "required": true,
                    "schema": {"type": "integer", "minimum": 1},
                }});
            }
            "503" => {
                response["headers"] = json!({"Retry-After": {
                    "description": "Seconds to wait before retrying",
                    "schema": {"type": "integer", "minimum": 0},
                }});
            }
            _ => {}
        }
        components["responses"][problem.name] = response;
    }
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for (path, item) in paths {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for op in item.values_mut() {
            let bearer = op["security"].as_array().is_some_and(|s| !s.is_empty());
            let body = op.get("requestBody").is_some();
            for problem in &problems {
                let applies = match problem.when {
                    When::Always => true,
                    When::Bearer => bearer,
                    When::Body => body,
                };
                let responses = &mut op["responses"];
                if applies && responses.get(&problem.status).is_none() {
                    responses[problem.status.as_str()] =
                        json!({"$ref": format!("#/components/responses/{}", problem.name)});
                }
            }
            if path == "/openapi.json" {
                op["responses"]["200"]["content"]["application/json"]["schema"] = json!({
                    "type": "object",
                    "description": "An OpenAPI 3.1 document",
                    "required": ["openapi", "info", "paths"],
                    "properties": {
                        "openapi": {"type": "string"},
                        "info": {"type": "object"},
                        "paths": {"type": "object"},
                        "components": {"type": "object"},
                    },
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_has_its_problems() {
        let doc = document();
        let search = &doc["paths"]["/campaign/api/projects/{projId}/search"]["post"]["responses"];
        for status in [
            "400", "401", "408", "413", "414", "415", "422", "429", "431", "500", "503",
        ] {
            assert!(search.get(status).is_some(), "search lacks {status}");
        }
        let too_many = &doc["components"]["responses"]["TooManyRequests"];
        assert_eq!(too_many["headers"]["Retry-After"]["required"], true);
        let list = &doc["paths"]["/campaign/api/projects/{projId}/campaigns"]["get"]["responses"];
        assert!(
            list.get("415").is_none(),
            "a GET without a body gives no 415"
        );
        let health = &doc["paths"]["/healthz"]["get"];
        assert_eq!(health["security"], json!([]));
        assert!(health["responses"].get("401").is_none());
        assert!(
            health["responses"].get("429").is_none(),
            "operations routes are never rate limited"
        );
        assert!(health["responses"].get("503").is_some());
        let unauthorized = &doc["components"]["responses"]["Unauthorized"];
        assert!(unauthorized["headers"].get("WWW-Authenticate").is_some());
    }

    #[test]
    fn the_codes_are_the_catalogue() {
        let doc = document();
        let schemas = &doc["components"]["schemas"];
        let listed = |schema: &str| -> Vec<String> {
            serde_json::from_value(schemas[schema]["properties"]["code"]["enum"].clone())
                .unwrap_or_else(|e| panic!("{schema}.code has no enum: {e}"))
        };
        let problems = listed("Problem");
        let fields = listed("FieldError");
        for &code in ErrorCode::ALL {
            let name = code.as_str().to_owned();
            assert_eq!(
                problems.contains(&name),
                code.appears().as_problem(),
                "{code}"
            );
            assert_eq!(fields.contains(&name), code.appears().as_field(), "{code}");
            if code.appears().as_problem() {
                let status = code.kind().status().to_string();
                let search = &doc["paths"]["/campaign/api/projects/{projId}/search"]["post"];
                let Some(reference) = search["responses"][&status]["$ref"].as_str() else {
                    continue; // a 405: no documented operation gives it
                };
                let name = reference.rsplit('/').next().unwrap();
                let description = doc["components"]["responses"][name]["description"]
                    .as_str()
                    .unwrap();
                assert!(description.contains(&format!("`{code}`")), "{code}");
            }
        }
        let span = &schemas["FieldError"]["properties"]["span"];
        assert!(!span.is_null(), "FieldError has its span");
    }
}
