//! The OpenAPI 3.1 document, generated from the code with utoipa: the
//! paths from the handlers' `#[utoipa::path]` attributes, the schemas from
//! the domain types (`ToSchema`, derived under the `http` feature), plus the
//! bearer security scheme and the problem responses every route may give
//! ([`document`]), then made exact where derive cannot say what the server
//! does (`exact`: required fields, decimals, parameter bounds).

mod exact;

use serde_json::{json, Value};
use utoipa::OpenApi;

use super::error::{Problem, PROBLEM_JSON};
use super::{campaign, consent, content, evidence, ops};

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
        evidence::subject_history,
        evidence::subject_state,
        evidence::export_subject,
        evidence::erase_subject,
        evidence::receipt,
        evidence::jwks,
        evidence::ledger,
        evidence::verify_ledger,
        campaign::search,
        campaign::redeem,
        campaign::cancel_redemption,
        campaign::list_redemptions,
        campaign::list_campaigns,
        campaign::create_campaign,
        campaign::get_campaign,
        campaign::update_campaign,
        campaign::delete_campaign,
        campaign::quota_usage,
        ops::healthz,
        ops::readyz,
        ops::openapi_json,
    ),
    components(schemas(
        Problem,
        crate::FieldError,
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
        (name = "operations", description = "Health, readiness, this document"),
    )
)]
pub(crate) struct ApiDoc;

/// The problem responses an operation may give, by status, with when.
const PROBLEMS: &[ProblemResponse] = &[
    p("400", "BadRequest", "Malformed JSON, a value of the wrong type (errors name the field), or a bad query parameter", When::Bearer),
    p("401", "Unauthorized", "Missing, malformed, badly signed or expired token; the WWW-Authenticate header says which", When::Bearer),
    p("403", "Forbidden", "The token lacks a scope of the route, or the path's project is not in its projects claim", When::Bearer),
    p("404", "NotFound", "No such resource in this project", When::Bearer),
    p("408", "RequestTimeout", "The request head or body did not arrive in time (body_timeout); the connection is closed", When::Always),
    p("413", "ContentTooLarge", "Body over 1 MiB, or a request over a size or work limit", When::Bearer),
    p("414", "UriTooLong", "The request target (path and query) is longer than the limit", When::Always),
    p("415", "UnsupportedMediaType", "A body without Content-Type: application/json", When::Body),
    p("422", "UnprocessableContent", "Semantic validation failed; errors lists every problem with its field path", When::Bearer),
    p("429", "TooManyRequests", "A rate limit of the project or of the token is reached (problem rate_limited; only when the server sets limits); retry after Retry-After seconds", When::Bearer),
    p("431", "RequestHeaderFieldsTooLarge", "The request head has too many or too large header fields", When::Always),
    p("500", "InternalError", "A bug; details are logged, never sent", When::Always),
    p("503", "Unavailable", "The store is unreachable, or the server is at its connection limit; retry after Retry-After seconds", When::Always),
];

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

/// One problem response: status, component name, description, when.
struct ProblemResponse {
    status: &'static str,
    name: &'static str,
    description: &'static str,
    when: When,
}

const fn p(
    status: &'static str,
    name: &'static str,
    description: &'static str,
    when: When,
) -> ProblemResponse {
    ProblemResponse {
        status,
        name,
        description,
        when,
    }
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
    for problem in PROBLEMS {
        let mut response = json!({"description": problem.description, "content": {}});
        response["content"][PROBLEM_JSON] =
            json!({"schema": {"$ref": "#/components/schemas/Problem"}});
        match problem.status {
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
            for problem in PROBLEMS {
                let applies = match problem.when {
                    When::Always => true,
                    When::Bearer => bearer,
                    When::Body => body,
                };
                let responses = &mut op["responses"];
                if applies && responses.get(problem.status).is_none() {
                    responses[problem.status] =
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
}
