//! Makes the generated document say exactly what the server does, where
//! the derived schemas cannot: the Rust types are shared by requests and
//! responses and keep required request fields optional (so that validation
//! reports every missing field at once, as 422 problems), which derive
//! cannot express. The rules below are applied to the document as JSON,
//! after utoipa built it:
//!
//! - an object schema reachable from both a request body and a response is
//!   split: requests use a copy named `<Name>Input`;
//! - request schemas list as `required` (and not nullable) the fields the
//!   server refuses when they are missing ([`REQUEST_REQUIRED`]);
//! - response schemas list as `required` every field the server always
//!   writes, that is all of them but [`RESPONSE_OPTIONAL`];
//! - decimals travel as JSON numbers: `type: number` without a binary
//!   floating-point `format`, and a description saying so;
//! - query and header parameters are never `null`; paging has its bounds;
//! - routes without a token say so (`security: []`).

use serde_json::{json, Map, Value};

use crate::store::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};

/// Fields of request schemas that the server refuses when missing, `null`
/// or blank (422 `required`), after the split into `<Name>Input` copies.
pub(super) const REQUEST_REQUIRED: &[(&str, &[&str])] = &[
    (
        "CampaignInput",
        &["name", "refCode", "startDate", "endDate"],
    ),
    ("QuotaInput", &["key", "value"]),
    ("RuleInput", &["then"]),
    ("ConditionInput", &["type", "attribute", "op"]),
    ("DataItemInput", &["attribute"]),
    (
        "AcceptConsentRequest",
        &[
            "app",
            "dataSubject",
            "consentId",
            "userAgent",
            "country",
            "localIp",
            "osVersion",
            "model",
            "deviceFingerprintId",
        ],
    ),
    ("PurposeRequest", &["app", "dataSubject", "purposeCode"]),
    ("ContentBody", &["data"]),
];

/// Fields of response schemas that the server leaves out of some
/// responses (`skip_serializing_if` in the code; every other field of a
/// response is always written). `scripts/openapi_replay.py` fails on a
/// required field missing from a real response.
pub(super) const RESPONSE_OPTIONAL: &[(&str, &str)] = &[
    ("SearchResponse", "explain"),
    ("Then", "cap"),
    ("Then", "allocate"),
    ("Then", "allocation"),
    ("Then", "capped"),
    ("Campaign", "stacking"),
    ("Campaign", "timeZone"),
    ("Explanation", "suppressedBy"),
    ("BenefitCap", "attribute"),
    ("BenefitCap", "max"),
    ("BenefitCap", "scope"),
    ("LineShare", "sku"),
    ("Stacking", "group"),
    ("FieldError", "span"),
    ("Redemption", "code"),
    ("Hold", "code"),
    ("Quota", "window"),
    ("QuotaCharge", "window"),
    ("QuotaUsage", "window"),
    ("QuotaUsage", "held"),
    ("WebhookView", "secret"),
    ("DeliveryView", "attemptLog"),
    ("Campaign", "statusSchedule"),
    ("RevisionView", "changes"),
    ("RevisionView", "campaign"),
    ("PatchOp", "value"),
    ("PatchOp", "oldValue"),
];

/// What every decimal carried as a JSON number says about itself.
pub(super) const DECIMAL_NOTE: &str = "An exact decimal, written as a JSON number whose text is the decimal itself (no binary floating point on the server: read it with a decimal type to keep it exact).";

/// Applies every rule of the module to `doc`.
pub(super) fn make_exact(doc: &mut Value) {
    split_shared_schemas(doc);
    require_request_fields(doc);
    require_response_fields(doc);
    exact_decimals(doc);
    exact_parameters(doc);
    public_routes(doc);
}

/// The operations of the document, mutably.
fn operations_mut(doc: &mut Value) -> impl Iterator<Item = &mut Map<String, Value>> {
    doc.get_mut("paths")
        .and_then(Value::as_object_mut)
        .into_iter()
        .flat_map(|paths| paths.values_mut())
        .filter_map(Value::as_object_mut)
        .flat_map(|item| {
            item.iter_mut()
                .filter(|(method, _)| {
                    matches!(
                        method.as_str(),
                        "get" | "put" | "post" | "delete" | "patch" | "head" | "options" | "trace"
                    )
                })
                .filter_map(|(_, op)| op.as_object_mut())
        })
}

/// The names of the component schemas `v` refers to, directly.
fn refs_in(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                if let Some(name) = r.strip_prefix("#/components/schemas/") {
                    out.push(name.to_owned());
                }
            }
            map.values().for_each(|v| refs_in(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| refs_in(v, out)),
        _ => {}
    }
}

/// Every component schema reachable from `roots`.
fn reachable(schemas: &Map<String, Value>, roots: Vec<String>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut todo = roots;
    while let Some(name) = todo.pop() {
        if seen.contains(&name) {
            continue;
        }
        if let Some(schema) = schemas.get(&name) {
            refs_in(schema, &mut todo);
        }
        seen.push(name);
    }
    seen.sort();
    seen
}

/// The component schemas reachable from request bodies and from responses.
fn request_and_response_schemas(doc: &Value) -> (Vec<String>, Vec<String>) {
    let mut request_roots = Vec::new();
    let mut response_roots = Vec::new();
    if let Some(paths) = doc["paths"].as_object() {
        for item in paths.values().filter_map(Value::as_object) {
            for op in item.values() {
                refs_in(&op["requestBody"], &mut request_roots);
                refs_in(&op["responses"], &mut response_roots);
            }
        }
    }
    refs_in(&doc["components"]["responses"], &mut response_roots);
    let empty = Map::new();
    let schemas = doc["components"]["schemas"].as_object().unwrap_or(&empty);
    (
        reachable(schemas, request_roots),
        reachable(schemas, response_roots),
    )
}

/// Gives requests their own copy (`<Name>Input`) of every object schema
/// that responses use too, so that each side can say what it requires.
fn split_shared_schemas(doc: &mut Value) {
    let (requests, responses) = request_and_response_schemas(doc);
    let Some(schemas) = doc["components"]["schemas"].as_object_mut() else {
        return;
    };
    let shared: Vec<String> = requests
        .iter()
        .filter(|name| responses.contains(name))
        .filter(|name| schemas[name.as_str()].get("properties").is_some())
        .cloned()
        .collect();
    if shared.is_empty() {
        return;
    }
    let rename = |v: &mut Value| rename_refs(v, &shared);
    for name in &shared {
        let mut copy = schemas[name.as_str()].clone();
        rename(&mut copy);
        schemas.insert(format!("{name}Input"), copy);
    }
    for name in requests.iter().filter(|name| !responses.contains(name)) {
        if let Some(schema) = schemas.get_mut(name) {
            rename(schema);
        }
    }
    for op in operations_mut(doc) {
        if let Some(body) = op.get_mut("requestBody") {
            rename(body);
        }
    }
}

/// Points every reference to a schema of `shared` at its `Input` copy.
fn rename_refs(v: &mut Value, shared: &[String]) {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                if let Some(name) = r.strip_prefix("#/components/schemas/") {
                    if shared.iter().any(|s| s == name) {
                        *r = format!("#/components/schemas/{name}Input");
                    }
                }
            }
            map.values_mut().for_each(|v| rename_refs(v, shared));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rename_refs(v, shared)),
        _ => {}
    }
}

/// `["string", "null"]` becomes `"string"`.
fn not_null(schema: &mut Value) {
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            schema["type"] = types[0].clone();
        }
    }
    if let Some(Value::Array(alternatives)) = schema.get_mut("oneOf") {
        alternatives.retain(|a| a.get("type").is_none_or(|t| t != "null"));
    }
}

fn require_request_fields(doc: &mut Value) {
    let Some(schemas) = doc["components"]["schemas"].as_object_mut() else {
        return;
    };
    for (name, fields) in REQUEST_REQUIRED {
        let Some(schema) = schemas.get_mut(*name) else {
            continue;
        };
        let mut required: Vec<String> = fields.iter().map(|&f| f.to_owned()).collect();
        for field in *fields {
            let Some(property) = schema["properties"].get_mut(*field) else {
                continue;
            };
            not_null(property);
            if property["type"] == "string" && property.get("format").is_none() {
                property["minLength"] = json!(1);
            }
            if property["type"] == "array" {
                property["minItems"] = json!(1);
            }
        }
        if let Some(Value::Array(existing)) = schema.get("required") {
            for f in existing.iter().filter_map(Value::as_str) {
                if !required.iter().any(|r| r == f) {
                    required.push(f.to_owned());
                }
            }
        }
        schema["required"] = json!(required);
    }
}

fn require_response_fields(doc: &mut Value) {
    let (requests, responses) = request_and_response_schemas(doc);
    let Some(schemas) = doc["components"]["schemas"].as_object_mut() else {
        return;
    };
    for name in responses.iter().filter(|n| !requests.contains(n)) {
        let Some(schema) = schemas.get_mut(name) else {
            continue;
        };
        require_all(name, schema);
    }
}

/// Every property of an object schema (and of the inline objects of its
/// `allOf`) is required, but those of [`RESPONSE_OPTIONAL`].
fn require_all(name: &str, schema: &mut Value) {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let required: Vec<&String> = properties
            .keys()
            .filter(|p| !RESPONSE_OPTIONAL.contains(&(name, p.as_str())))
            .collect();
        schema["required"] = json!(required);
    }
    if let Some(Value::Array(parts)) = schema.get_mut("allOf") {
        for part in parts {
            require_all(name, part);
        }
    }
}

/// Decimals (`schema(value_type = f64)` in the code) lose their binary
/// `format` and say how they travel.
fn exact_decimals(doc: &mut Value) {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                if map.get("format").is_some_and(|f| f == "double") {
                    map.remove("format");
                    let note = match map.get("description").and_then(Value::as_str) {
                        Some(d) => format!("{d} {DECIMAL_NOTE}"),
                        None => DECIMAL_NOTE.to_owned(),
                    };
                    map.insert("description".to_owned(), Value::String(note));
                }
                map.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut doc["components"]["schemas"]);
}

/// Parameters are never `null` (a query or header value is text or
/// absent); `page` and `size` have the server's bounds.
fn exact_parameters(doc: &mut Value) {
    for op in operations_mut(doc) {
        let Some(Value::Array(parameters)) = op.get_mut("parameters") else {
            continue;
        };
        for p in parameters {
            let name = p["name"].as_str().unwrap_or_default().to_owned();
            let Some(schema) = p.get_mut("schema") else {
                continue;
            };
            not_null(schema);
            if p["in"] != "query" {
                continue;
            }
            let schema = &mut p["schema"];
            match name.as_str() {
                "size" => {
                    schema["minimum"] = json!(1);
                    schema["maximum"] = json!(MAX_PAGE_SIZE);
                    schema["default"] = json!(DEFAULT_PAGE_SIZE);
                    schema["format"] = json!("int32");
                }
                "page" => {
                    schema["minimum"] = json!(0);
                    schema["maximum"] = json!(u32::MAX);
                    schema["default"] = json!(0);
                    schema["format"] = json!("int64");
                }
                _ => {}
            }
        }
    }
}

/// Routes that need no token say so, rather than leaving it unsaid.
fn public_routes(doc: &mut Value) {
    for op in operations_mut(doc) {
        op.entry("security").or_insert_with(|| json!([]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Value {
        json!({
            "paths": {"/a": {"post": {
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/In"}}}},
                "responses": {"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Out"}}}}},
                "parameters": [{"name": "size", "in": "query", "schema": {"type": ["integer", "null"]}}]
            }}},
            "components": {"schemas": {
                "In": {"type": "object", "properties": {"part": {"$ref": "#/components/schemas/Part"}, "n": {"type": "number", "format": "double"}}},
                "Out": {"type": "object", "properties": {"part": {"$ref": "#/components/schemas/Part"}, "x": {"type": ["string", "null"]}}},
                "Part": {"type": "object", "properties": {"id": {"type": "string"}}}
            }}
        })
    }

    #[test]
    fn shared_schemas_are_split_and_each_side_says_what_it_requires() {
        let mut d = doc();
        make_exact(&mut d);
        let schemas = &d["components"]["schemas"];
        assert_eq!(
            schemas["In"]["properties"]["part"]["$ref"],
            "#/components/schemas/PartInput"
        );
        assert_eq!(
            schemas["Out"]["properties"]["part"]["$ref"],
            "#/components/schemas/Part"
        );
        assert_eq!(schemas["Part"]["required"], json!(["id"]));
        assert!(schemas["PartInput"].get("required").is_none());
        assert_eq!(schemas["Out"]["required"], json!(["part", "x"]));
        assert!(schemas["In"].get("required").is_none());
        let n = &schemas["In"]["properties"]["n"];
        assert!(n.get("format").is_none(), "{n}");
        assert_eq!(n["description"], DECIMAL_NOTE);
        let size = &d["paths"]["/a"]["post"]["parameters"][0]["schema"];
        assert_eq!(size["type"], "integer");
        assert_eq!(size["maximum"], MAX_PAGE_SIZE);
        assert_eq!(d["paths"]["/a"]["post"]["security"], json!([]));
    }

    #[test]
    fn required_request_fields_are_not_nullable() {
        let mut d = json!({"paths": {}, "components": {"schemas": {
            "PurposeRequest": {"type": "object", "properties": {
                "app": {"type": ["string", "null"]},
                "dataSubject": {"type": ["string", "null"]},
                "purposeCode": {"type": ["string", "null"]}
            }}
        }}});
        make_exact(&mut d);
        let s = &d["components"]["schemas"]["PurposeRequest"];
        assert_eq!(s["required"], json!(["app", "dataSubject", "purposeCode"]));
        assert_eq!(s["properties"]["app"]["type"], "string");
        assert_eq!(s["properties"]["app"]["minLength"], 1);
    }
}
