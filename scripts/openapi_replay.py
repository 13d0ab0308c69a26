"""Replays the README walkthrough through a client generated from the
OpenAPI document, and checks every response against the document.

    python openapi_replay.py BASE_URL TOKEN DOCUMENT.json

Run by scripts/openapi-check.sh with the generated package `accord_client`
on the path and a server started with `--demo`. Every call goes through the
generated functions and request models (so a request the models build is a
request the server accepts), and every response body is validated against
the schema the document gives for its status and media type, with one
extra: an object may hold no property its schema does not declare (so a
field the server writes but the document lacks is caught too). Exits 1 on
the first mismatch.
"""

import copy
import json
import sys

from jsonschema import Draft202012Validator

from accord_client import AuthenticatedClient, Client
from accord_client.api.campaign import redeem, search
from accord_client.api.consent import (
    accept_consent,
    purpose_options,
    to_accept,
    withdraw_purpose,
)
from accord_client.api.operations import healthz, openapi_json, readyz
from accord_client.models import (
    AcceptConsentRequest,
    PurposeRequest,
    RedeemRequest,
    SearchRequest,
)

BASE, TOKEN, DOC_PATH = sys.argv[1], sys.argv[2], sys.argv[3]
DOC = json.load(open(DOC_PATH, encoding="utf-8"))
PROJECT = "demo"


def closed(doc):
    """The document with every object schema closed to undeclared
    properties (but those that an allOf extends, and maps)."""
    doc = copy.deepcopy(doc)
    extended = set()

    def find_all_of(v):
        if isinstance(v, dict):
            for part in v.get("allOf", []):
                if "$ref" in part:
                    extended.add(part["$ref"].rsplit("/", 1)[-1])
            for x in v.values():
                find_all_of(x)
        elif isinstance(v, list):
            for x in v:
                find_all_of(x)

    find_all_of(doc)
    for name, schema in doc["components"]["schemas"].items():
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and name not in extended
        ):
            schema["additionalProperties"] = False
    return doc


CLOSED = closed(DOC)
checked = []


def pointer(*parts):
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def check(name, response, status, path, method, contains=()):
    """The response has `status`, a body valid against the document's
    schema for it, and each text of `contains` in its body."""
    body = response.content.decode("utf-8")
    if response.status_code != status:
        sys.exit(f"{name}: status {response.status_code}, expected {status}: {body}")
    op = DOC["paths"][path][method]
    declared = op["responses"].get(str(status))
    if declared is None:
        sys.exit(f"{name}: status {status} is not declared for {method} {path}")
    where = ("paths", path, method, "responses", str(status))
    if "$ref" in declared:
        name_ = declared["$ref"].rsplit("/", 1)[-1]
        declared = DOC["components"]["responses"][name_]
        where = ("components", "responses", name_)
    media = response.headers.get("content-type", "").split(";")[0].strip()
    content = declared.get("content", {})
    if media not in content:
        sys.exit(f"{name}: media type {media!r} is not declared: {list(content)}")
    schema = dict(CLOSED)
    schema["$ref"] = pointer(*where, "content", media, "schema")
    errors = sorted(
        Draft202012Validator(schema).iter_errors(json.loads(body)),
        key=lambda e: list(e.absolute_path),
    )
    if errors:
        for e in errors[:5]:
            print(f"  at {list(e.absolute_path)}: {e.message}", file=sys.stderr)
        sys.exit(f"{name}: the {status} body does not match its schema: {body[:500]}")
    for text in contains:
        if text not in body:
            sys.exit(f"{name}: {text!r} not in {body}")
    checked.append(f"{method.upper()} {path} -> {status}")
    print(f"ok  {name}: {status}")
    return json.loads(body)


public = Client(base_url=BASE)
client = AuthenticatedClient(base_url=BASE, token=TOKEN)
campaign = "/campaign/api/projects/{projId}"
bff = "/bff/api/consent/projects/{projId}"

check("healthz", healthz.sync_detailed(client=public), 200, "/healthz", "get")
check("readyz", readyz.sync_detailed(client=public), 200, "/readyz", "get", ['"ready"'])
check("openapi.json", openapi_json.sync_detailed(client=public), 200, "/openapi.json", "get")

phone = {"sku": "PHONE-1", "amount": 1, "price": "1200", "tags": ["phone"]}
res = search.sync_detailed(
    PROJECT,
    client=client,
    body=SearchRequest.from_dict({
        "attribute": {"userId": "u1", "promoCode": "welcome50"},
        "cart": {"totalPrice": "1200", "currency": "THB", "items": [phone]},
    }),
)
found = check("1. search", res, 200, f"{campaign}/search", "post",
              ['"refCode":"WELCOME50"', '"refCode":"CART10"', '"value":"120"', '"value":"CHARGER-1"'])
assert found["actions"], found

welcome = {
    "campaignCode": "WELCOME50",
    "attribute": {"userId": "u1", "promoCode": "welcome50"},
    "cart": {"totalPrice": "1200", "currency": "THB"},
}
res = redeem.sync_detailed(PROJECT, client=client, body=RedeemRequest.from_dict(welcome),
                           idempotency_key="order-1001")
first = check("2. redeem", res, 201, f"{campaign}/redeem/campaign-code", "post",
              ['"campaignCode":"WELCOME50"', '"status":"COMPLETE"'])
res = redeem.sync_detailed(PROJECT, client=client, body=RedeemRequest.from_dict(welcome),
                           idempotency_key="order-1001")
again = check("2. redeem again (replay)", res, 201, f"{campaign}/redeem/campaign-code", "post")
assert res.headers.get("idempotent-replayed") == "true", res.headers
assert again["id"] == first["id"], (again, first)
second = dict(welcome, cart={"totalPrice": "800", "currency": "THB"})
res = redeem.sync_detailed(PROJECT, client=client, body=RedeemRequest.from_dict(second),
                           idempotency_key="order-1002")
check("2. redeem, once per customer", res, 409, f"{campaign}/redeem/campaign-code", "post",
      ['"code":"quota_exceeded"'])
# Without an Idempotency-Key (the parameter left unset, not sent as null).
res = redeem.sync_detailed(PROJECT, client=client, body=RedeemRequest.from_dict({
    "campaignCode": "FREEGIFT",
    "actionRefs": ["d0000000-0000-4000-8000-000000000004"],
    "attribute": {"userId": "u1"},
    "cart": {"items": [phone]},
}))
check("3. redeem a choice", res, 201, f"{campaign}/redeem/campaign-code", "post",
      ['"status":"COMPLETE"', '"value":"CHARGER-1"'])

res = to_accept.sync_detailed(PROJECT, client=client, app="demo-app", data_subject="u1")
offered = check("4. to-accept", res, 200, f"{bff}/to-accept", "get",
                ['"reason":"NEW"', '"purposes":["marketing_email","analytics"]'])
consent_id = offered[0]["id"]

res = accept_consent.sync_detailed(PROJECT, client=client, body=AcceptConsentRequest.from_dict({
    "app": "demo-app", "dataSubject": "u1", "consentId": consent_id,
    "purposes": ["marketing_email"], "userAgent": "generated client", "country": "TH",
    "localIp": "192.168.1.20", "osVersion": "Linux", "model": "laptop",
    "deviceFingerprintId": "fp-demo-1", "note": "walkthrough",
}))
check("5. accept consent", res, 201, f"{bff}/consent-acceptance", "post",
      ['"consentApplication":"demo-app"', '"status":"ACCEPTED"'])
res = to_accept.sync_detailed(PROJECT, client=client, app="demo-app", data_subject="u1")
assert check("5. nothing left", res, 200, f"{bff}/to-accept", "get") == []
res = purpose_options.sync_detailed(PROJECT, client=client, app="demo-app", data_subject="u1")
check("5. purpose options", res, 200, f"{bff}/purpose-options", "get",
      ['"code":"marketing_email","accepted":true'])

res = withdraw_purpose.sync_detailed(PROJECT, client=client, body=PurposeRequest.from_dict({
    "app": "demo-app", "dataSubject": "u1", "purposeCode": "marketing_email",
}))
check("6. withdraw", res, 200, f"{bff}/purpose-withdrawal", "post",
      ['"purposeCode":"marketing_email"', '"status":"WITHDRAWN"'])

# Problems are documented too: no token, and a body the models would not
# build (a missing required field) sent by hand.
res = to_accept.sync_detailed(PROJECT, client=AuthenticatedClient(base_url=BASE, token="x"),
                              app="demo-app", data_subject="u1")
check("401 without a valid token", res, 401, f"{bff}/to-accept", "get")
if not res.headers.get("www-authenticate", "").startswith("Bearer"):
    sys.exit(f"401 without WWW-Authenticate: {dict(res.headers)}")
raw = client.get_httpx_client().post(
    f"/campaign/api/projects/{PROJECT}/redeem/campaign-code", json={"cart": {}})
check("422 without campaignCode", raw, 422, f"{campaign}/redeem/campaign-code", "post",
      ['"field":"campaignCode"'])

print(f"== {len(checked)} responses matched their schemas")
