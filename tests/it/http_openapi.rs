//! The OpenAPI document served at `/openapi.json`: OpenAPI 3.1, every route
//! the router serves (from the router's own table, `ROUTES`) and nothing
//! else, the scopes of each, resolvable references, spec field names.
#![cfg(feature = "http")]

use crate::http_support;

use std::collections::BTreeSet;

use accord::http::{Access, ROUTES};
use http_support::{parts, start};
use serde_json::{json, Value};

async fn served_doc() -> Value {
    let s = start().await;
    let (status, doc) = parts(s.client.get(s.url("/openapi.json")).send().await.unwrap()).await;
    assert_eq!(status, 200);
    doc
}

fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if [
                "get", "put", "post", "delete", "patch", "head", "options", "trace",
            ]
            .contains(&method.as_str())
            {
                out.push((method.to_uppercase(), path.clone(), op));
            }
        }
    }
    out
}

#[tokio::test]
async fn the_document_is_openapi_3_1_and_lists_exactly_the_served_routes() {
    let doc = served_doc().await;
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1."),
        "{}",
        doc["openapi"]
    );
    assert_eq!(doc["info"]["title"], "Accord");
    let documented: BTreeSet<(String, String)> = operations(&doc)
        .into_iter()
        .map(|(m, p, _)| (m, p))
        .collect();
    let served: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_owned(), r.path.to_owned()))
        .collect();
    assert_eq!(documented, served);
    let ids: BTreeSet<&str> = operations(&doc)
        .iter()
        .map(|(m, p, op)| {
            op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{m} {p} has no operationId"))
        })
        .collect();
    assert_eq!(
        ids.len(),
        served.len(),
        "operation ids are not unique: {ids:?}"
    );
    assert_eq!(served.len(), ROUTES.len(), "a route is declared twice");
}

#[tokio::test]
async fn every_route_of_the_table_is_really_served() {
    // The table is what the router is built from; check the router agrees
    // by asking it: a served route never answers route_not_found or 405.
    let s = start().await;
    for r in ROUTES {
        let path = r
            .path
            .replace("{projId}", "shop")
            .replace("{id}", "00000000-0000-4000-8000-000000000000")
            .replace("{type}", "svc-consent-v1");
        let method = reqwest::Method::from_bytes(r.method.as_bytes()).unwrap();
        let res = s
            .req(method, &s.url(&path))
            .json(&serde_json::json!({}))
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        let (_, body) = parts(res).await;
        assert!(
            status != 405 && body["code"] != "route_not_found",
            "{} {}: {status} {body}",
            r.method,
            r.path
        );
    }
}

#[tokio::test]
async fn security_requirements_match_the_route_table() {
    let doc = served_doc().await;
    let scheme = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(scheme["type"], "http");
    assert_eq!(scheme["scheme"], "bearer");
    assert_eq!(scheme["bearerFormat"], "JWT");
    for r in ROUTES {
        let op = &doc["paths"][r.path][r.method.to_lowercase()];
        match r.access {
            Access::Public => {
                assert_eq!(op["security"], json!([]), "{} {}", r.method, r.path);
                for status in ["408", "414", "431", "500", "503"] {
                    assert!(
                        op["responses"].get(status).is_some(),
                        "{} {} lacks {status}",
                        r.method,
                        r.path
                    );
                }
                assert!(op["responses"].get("401").is_none());
            }
            Access::Bearer(scopes) => {
                let listed: Vec<&str> = op["security"][0]["bearer"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{} {} has no security", r.method, r.path))
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                assert_eq!(listed, scopes, "{} {}", r.method, r.path);
                for status in [
                    "400", "401", "403", "404", "408", "413", "414", "422", "431", "500", "503",
                ] {
                    assert!(
                        op["responses"].get(status).is_some(),
                        "{} {} lacks {status}",
                        r.method,
                        r.path
                    );
                }
                // 415 exactly where a body is read.
                assert_eq!(
                    op["responses"].get("415").is_some(),
                    op.get("requestBody").is_some(),
                    "{} {}",
                    r.method,
                    r.path
                );
            }
        }
    }
    let unauthorized = &doc["components"]["responses"]["Unauthorized"];
    assert_eq!(
        unauthorized["headers"]["WWW-Authenticate"]["schema"]["type"],
        "string"
    );
    let unavailable = &doc["components"]["responses"]["Unavailable"];
    assert!(unavailable["headers"].get("Retry-After").is_some());
}

/// What a generated client needs: servers, a summary and a description for
/// every operation, a schema for every response body.
#[tokio::test]
async fn every_operation_is_described_and_every_body_has_a_schema() {
    let doc = served_doc().await;
    assert!(doc["servers"][0]["url"].is_string(), "{}", doc["servers"]);
    for (method, path, op) in operations(&doc) {
        for field in ["summary", "description"] {
            let text = op[field].as_str().unwrap_or_default();
            assert!(text.len() > 10, "{method} {path}: {field} {text:?}");
        }
        for (status, response) in op["responses"].as_object().unwrap() {
            if let Some(content) = response.get("content") {
                for (media, body) in content.as_object().unwrap() {
                    assert!(
                        body.get("schema").is_some(),
                        "{method} {path} {status} {media}: no schema"
                    );
                }
            }
        }
    }
}

/// Requests list as required what the server refuses without; responses
/// list every field the server always writes; shared shapes are split.
#[tokio::test]
async fn required_fields_say_what_the_server_refuses_and_always_writes() {
    let doc = served_doc().await;
    let schemas = &doc["components"]["schemas"];
    let required = |name: &str| -> BTreeSet<String> {
        schemas[name]["required"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} has no required"))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    let has = |name: &str, fields: &[&str]| {
        let r = required(name);
        for f in fields {
            assert!(r.contains(*f), "{name} does not require {f}: {r:?}");
        }
    };
    // A redeem names its campaign by `campaignCode` or by a pool's `code`.
    assert!(schemas["RedeemRequest"]["required"].is_null());
    has("PurposeRequest", &["app", "dataSubject", "purposeCode"]);
    has(
        "AcceptConsentRequest",
        &[
            "app",
            "dataSubject",
            "consentId",
            "userAgent",
            "deviceFingerprintId",
        ],
    );
    has(
        "CampaignInput",
        &["name", "refCode", "startDate", "endDate"],
    );
    has("QuotaInput", &["key", "value"]);
    has("ConditionInput", &["type", "attribute", "op"]);
    // A required request field is not nullable.
    assert_eq!(
        schemas["RedeemRequest"]["properties"]["campaignCode"]["type"],
        "string"
    );
    assert_eq!(
        schemas["CampaignInput"]["properties"]["rules"]["items"]["$ref"],
        "#/components/schemas/RuleInput"
    );
    // Responses: always-written fields are required.
    has("Then", &["action", "actionRef", "data", "internalAction"]);
    has("Rule", &["id", "name", "when", "then", "thenOperator"]);
    has("SearchResponse", &["actions", "attribute"]);
    assert!(!required("SearchResponse").contains("explain"));
    has("Campaign", &["active", "groupName", "channel"]);
    // A hold of a code-pool campaign shows its code; other holds omit it.
    assert!(
        schemas["Hold"]["properties"]["code"].is_object(),
        "{}",
        schemas["Hold"]
    );
    assert!(!required("Hold").contains("code"));
    assert_eq!(
        schemas["Campaign"]["properties"]["rules"]["items"]["$ref"],
        "#/components/schemas/Rule"
    );
    // Decimals are JSON numbers, exact, with no binary format.
    let value = &schemas["Quota"]["properties"]["value"];
    assert_eq!(value["type"], "number");
    assert!(value.get("format").is_none(), "{value}");
    assert!(value["description"]
        .as_str()
        .unwrap()
        .contains("exact decimal"));
    // Cart numbers: a string or a number, never a boolean.
    let scalar = serde_json::to_string(&schemas["Scalar"]).unwrap();
    assert!(!scalar.contains("boolean"), "{scalar}");
}

/// Parameters are never null, and paging has the server's bounds.
#[tokio::test]
async fn parameters_have_the_server_bounds() {
    let doc = served_doc().await;
    let mut sizes = 0;
    for (method, path, op) in operations(&doc) {
        for p in op["parameters"].as_array().into_iter().flatten() {
            let schema = &p["schema"];
            assert!(
                !serde_json::to_string(schema).unwrap().contains("null"),
                "{method} {path} {}: {schema}",
                p["name"]
            );
            if p["name"] == "size" {
                sizes += 1;
                assert_eq!(schema["minimum"], 1);
                assert_eq!(schema["maximum"], 1000);
            }
        }
    }
    assert_eq!(
        sizes, 9,
        "the paged lists: campaigns, redemptions, content records, a subject's history, quota usage, codes, campaign revisions, acceptances past their lifespan, webhook deliveries"
    );
    let redeem = &doc["paths"]["/campaign/api/projects/{projId}/redeem/campaign-code"]["post"];
    let key = redeem["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Idempotency-Key")
        .unwrap();
    assert_eq!(key["schema"]["type"], "string");
}

/// The server's bounds behind those the document states.
#[tokio::test]
async fn the_stated_bounds_are_the_served_ones() {
    let s = start().await;
    for (size, status) in [("0", 400), ("1", 200), ("1000", 200), ("1001", 400)] {
        let res = s
            .req(
                reqwest::Method::GET,
                &s.campaign_url(&format!("/redemptions?size={size}")),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), status, "size={size}");
    }
}

/// Every `$ref` in the document resolves.
fn check_refs(doc: &Value, v: &Value, seen: &mut usize) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                let pointer = r.strip_prefix('#').expect("local reference");
                assert!(doc.pointer(pointer).is_some(), "dangling {r}");
                *seen += 1;
            }
            for v in map.values() {
                check_refs(doc, v, seen);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| check_refs(doc, v, seen)),
        _ => {}
    }
}

#[tokio::test]
async fn references_resolve_and_schemas_use_the_spec_names() {
    let doc = served_doc().await;
    let mut seen = 0;
    check_refs(&doc, &doc, &mut seen);
    assert!(seen > 50, "only {seen} references");
    let schemas = &doc["components"]["schemas"];
    let props = |name: &str| -> BTreeSet<String> {
        schemas[name]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("schema {name}"))
            .keys()
            .cloned()
            .collect()
    };
    let has = |name: &str, fields: &[&str]| {
        let p = props(name);
        for f in fields {
            assert!(p.contains(*f), "{name} lacks {f}: {p:?}");
        }
    };
    has("SearchResponse", &["attribute", "actions"]);
    has("ActionMatch", &["rule", "campaign", "action"]);
    has("RuleRef", &["id", "name", "thenOperator"]);
    has(
        "CampaignRef",
        &["id", "name", "startDate", "endDate", "refCode", "imageUrl"],
    );
    has("Then", &["action", "internalAction", "actionRef", "data"]);
    has("Redemption", &["id", "actionTxs", "campaignCode", "status"]);
    has("ActionTx", &["status", "then"]);
    has(
        "RedeemRequest",
        &[
            "campaignCode",
            "actionRefs",
            "channel",
            "attribute",
            "cart",
            "idempotencyKey",
        ],
    );
    has(
        "Campaign",
        &[
            "id",
            "name",
            "refCode",
            "status",
            "priority",
            "quotas",
            "rules",
            "projectId",
            "version",
            "active",
            "groupName",
            "createdBy",
            "lastModifiedDate",
        ],
    );
    has(
        "Condition",
        &["type", "attribute", "op", "value", "valueType"],
    );
    has("WhenGroup", &["match", "conditions"]);
    has("Quota", &["key", "value", "valueField"]);
    has(
        "Problem",
        &["type", "title", "status", "detail", "code", "errors"],
    );
    has("FieldError", &["field", "message", "code"]);
    assert_eq!(
        schemas["Op"]["enum"].as_array().unwrap().len(),
        12,
        "the twelve ops of the spec"
    );
    assert_eq!(
        schemas["ThenOperator"]["enum"],
        serde_json::json!(["AND", "OR"])
    );
    // Lists document their total.
    let list =
        &doc["paths"]["/campaign/api/projects/{projId}/campaigns"]["get"]["responses"]["200"];
    assert!(list["headers"].get("X-Total-Count").is_some(), "{list}");
    assert_eq!(
        list["content"]["application/json"]["schema"]["type"],
        "array"
    );
    // Problems are problem+json.
    let problem = &doc["components"]["responses"]["Unauthorized"]["content"];
    assert!(problem.get("application/problem+json").is_some());
}

/// The request examples of the document are requests the API accepts: the
/// campaign example creates a campaign, and the search and redeem examples
/// (run against it, the example cart holds shoes) match it.
#[tokio::test]
async fn the_request_examples_are_accepted() {
    let s = start().await;
    let (_, doc) = parts(s.client.get(s.url("/openapi.json")).send().await.unwrap()).await;
    let example = |path: &str| -> Value {
        let e =
            &doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["example"];
        assert!(e.is_object(), "{path}: no example");
        e.clone()
    };
    let base = "/campaign/api/projects/{projId}";
    let url = |rest: &str| s.campaign_url(rest);
    let campaign = example(&format!("{base}/campaigns"));
    let res = s
        .req(reqwest::Method::POST, &url("/campaigns"))
        .json(&campaign)
        .send()
        .await
        .unwrap();
    let (status, created) = parts(res).await;
    assert_eq!(status, 201, "{created}");
    let res = s
        .req(reqwest::Method::POST, &url("/search"))
        .json(&example(&format!("{base}/search")))
        .send()
        .await
        .unwrap();
    let (status, found) = parts(res).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(
        found["actions"][0]["campaign"]["refCode"],
        created["refCode"]
    );
    let mut redeem = example(&format!("{base}/redeem/campaign-code"));
    redeem["campaignCode"] = created["refCode"].clone();
    redeem["cart"] = example(&format!("{base}/search"))["cart"].clone();
    let res = s
        .req(reqwest::Method::POST, &url("/redeem/campaign-code"))
        .json(&redeem)
        .send()
        .await
        .unwrap();
    let (status, redemption) = parts(res).await;
    assert_eq!(status, 201, "{redemption}");
    // The replace example is the create example.
    let put = &doc["paths"][format!("{base}/campaigns/{{id}}")]["put"]["requestBody"]["content"]
        ["application/json"]["example"];
    assert_eq!(put["refCode"], campaign["refCode"]);
}

/// Decimals are JSON numbers whose text is the exact decimal: the schema
/// gives them no binary format (`double`).
#[tokio::test]
async fn decimal_fields_are_typed_exact_numbers() {
    let doc = served_doc().await;
    let schemas = &doc["components"]["schemas"];
    for (schema, field) in [
        ("Quota", "value"),
        ("QuotaUsage", "used"),
        ("QuotaUsage", "limit"),
        ("QuotaCharge", "amount"),
        ("QuotaCharge", "limit"),
    ] {
        let property = schemas[schema]["properties"][field].to_string();
        assert!(
            property.contains("number") && !property.contains("double"),
            "{schema}.{field}: {property}"
        );
    }
}
