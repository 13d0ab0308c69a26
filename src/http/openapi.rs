//! The OpenAPI 3.1 document, generated from the code with utoipa: the
//! paths from the handlers' `#[utoipa::path]` attributes, the schemas from
//! the domain types (`ToSchema`, derived under the `http` feature), plus the
//! bearer security scheme and the problem responses every route may give.

use utoipa::openapi::path::Operation;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa::{Modify, OpenApi};

use super::error::{Problem, PROBLEM_JSON};
use super::{campaign, consent, content, evidence, ops};

/// The OpenAPI document of the router.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Accord",
        description = "Consent and promotions: the consent application-facing routes (bff), the content store (cms), campaigns (search, redeem, administration) and operations. Every route except the operations routes needs `Authorization: Bearer <JWT>` with the scopes listed per operation and the path's `projId` in the token's `projects` claim (or `[\"*\"]`). Errors are RFC 9457 problem details. Lists are bare JSON arrays with the total in `X-Total-Count`.",
        license(name = "MIT OR Apache-2.0")
    ),
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
        crate::consent::ReducedEnvelope,
        content::ContentTypeName,
        crate::campaign::CampaignStatus,
    )),
    modifiers(&Common),
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

/// The problem responses an authenticated operation may give, by status.
const PROBLEMS: &[(&str, &str, &str)] = &[
    ("400", "BadRequest", "Malformed JSON, a value of the wrong type (errors name the field), or a bad query parameter"),
    ("401", "Unauthorized", "Missing, malformed, badly signed or expired token (WWW-Authenticate: Bearer)"),
    ("403", "Forbidden", "The token lacks a scope of the route, or the path's project is not in its projects claim"),
    ("404", "NotFound", "No such resource in this project"),
    ("413", "ContentTooLarge", "Body over 1 MiB, or a request over a size or work limit"),
    ("415", "UnsupportedMediaType", "A body without Content-Type: application/json"),
    ("422", "UnprocessableContent", "Semantic validation failed; errors lists every problem with its field path"),
    ("500", "InternalError", "A bug; details are logged, never sent"),
    ("503", "Unavailable", "The store is unreachable; retry after Retry-After seconds"),
];

/// Adds the security scheme and the shared problem responses.
struct Common;

impl Modify for Common {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.security_schemes.insert(
            "bearer".to_owned(),
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "A JWT (HS256, RS256 or ES256, as configured) with sub, exp, scope (space-separated) and projects (array of project ids, or [\"*\"]). The scopes an operation needs are listed in its security requirement.",
                    ))
                    .build(),
            ),
        );
        for (_, name, description) in PROBLEMS {
            components.responses.insert(
                (*name).to_owned(),
                RefOr::T(
                    ResponseBuilder::new()
                        .description(*description)
                        .content(
                            PROBLEM_JSON,
                            ContentBuilder::new()
                                .schema(Some(Ref::from_schema_name("Problem")))
                                .build(),
                        )
                        .build(),
                ),
            );
        }
        for item in doc.paths.paths.values_mut() {
            for op in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                if op.security.as_ref().is_some_and(|s| !s.is_empty()) {
                    add_problems(op);
                }
            }
        }
    }
}

fn add_problems(op: &mut Operation) {
    for (status, name, _) in PROBLEMS {
        op.responses
            .responses
            .entry((*status).to_owned())
            .or_insert_with(|| RefOr::Ref(Ref::from_response_name(*name)));
    }
}
