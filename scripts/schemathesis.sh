#!/usr/bin/env bash
# API fuzzing with schemathesis against the `accord` server over a fresh
# SQLite file with the demo data.
#
#   scripts/schemathesis.sh [MAX_EXAMPLES]      # default 50 per operation
#
# Two passes, each on a server of its own (scripts/start-accord.sh: a free
# port of 127.0.0.1, a random HS256 secret, a token for project `demo`):
# every operation with the specification's scopes, then the evidence,
# retention and webhook operations with every scope. Each runs schemathesis
# with the checks not_a_server_error, status_code_conformance,
# content_type_conformance and response_schema_conformance, then looks for
# errors in the server's log. Exits non-zero when either pass finds a
# failure. Schemathesis (pinned below) is installed in
# a venv under target/ on first use; PyPI must be reachable then.
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_EXAMPLES="${1:-50}"
SCHEMATHESIS_VERSION=4.32.5
VENV="${SCHEMATHESIS_VENV:-target/schemathesis-venv}"
PYTHON="${PYTHON:-python3}"

ST="$VENV/bin/schemathesis"
PY="$VENV/bin/python"
if ! "$ST" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
    echo "== installing schemathesis $SCHEMATHESIS_VERSION in $VENV"
    if "$PYTHON" -m venv "$VENV"; then
        "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
    else
        # No venv module: a user install instead.
        "$PYTHON" -m pip install --quiet --user --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
        ST="$("$PYTHON" -m site --user-base)/bin/schemathesis"
        PY="$PYTHON"
    fi
fi

. scripts/start-accord.sh

# The ids of the demo privacy notice and consent, for the config file.
ids() {
    TOKEN="$TOKEN" "$PY" - "$BASE" "$1" <<'PY'
import json, os, sys, urllib.request
req = urllib.request.Request(
    f"{sys.argv[1]}/cms/api/projects/demo/c/{sys.argv[2]}",
    headers={"Authorization": "Bearer " + os.environ["TOKEN"]},
)
print(json.load(urllib.request.urlopen(req, timeout=10))[0]["id"])
PY
}

# One pass: a fresh server whose token has the scopes $ACCORD_TOOL_SCOPES,
# schemathesis over the operations the extra arguments select, then the
# server's log checked. Sets status to 1 on any failure.
status=0
pass() {
    local name="$1"
    shift
    start_accord schemathesis
    ACCORD_NOTICE_ID="$(ids svc-privacy-notice-v1)"
    ACCORD_CONSENT_ID="$(ids svc-consent-v1)"
    export ACCORD_NOTICE_ID ACCORD_CONSENT_ID

    echo "== schemathesis $SCHEMATHESIS_VERSION, $name, at most $MAX_EXAMPLES examples per operation"
    # One worker: with two, hypothesis's lambda descriptions sometimes hit
    # CPython 3.11's "AST constructor recursion depth mismatch" (an error of
    # the tool, not a finding).
    "$ST" --config-file scripts/schemathesis.toml run "$BASE/openapi.json" \
        -H "Authorization: Bearer $TOKEN" \
        --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
        --max-examples "$MAX_EXAMPLES" \
        --workers 1 \
        --no-color \
        "$@" \
        ${SCHEMATHESIS_ARGS:-} || status=1

    # The server logs one line per request (info): count them by status class.
    "$PY" - "$WORK/server.log" <<'PY'
import collections, re, sys
statuses = collections.Counter()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    m = re.search(r" request .*status=(\d{3})", line) or re.search(r"status=(\d{3}).* request", line)
    if "accord::http" in line and m:
        statuses[m.group(1)[0] + "xx"] += 1
total = sum(statuses.values())
print(f"== server: {total} requests answered: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
PY
    if grep -q "panicked\|internal error\|ERROR" "$WORK/server.log"; then
        echo "== server errors in the log:" >&2
        grep "panicked\|internal error\|ERROR" "$WORK/server.log" | head -20 >&2
        status=1
    fi
    stop_accord
}

# Every operation, with the scopes of the specification: the routes that
# need an audit or admin scope are checked for their 403.
pass "every operation, the specification's scopes"

# The consent evidence, retention and webhook routes with every scope, so
# that their handlers are reached. A server of their own: erasure and
# purge pseudonymize the demo data that the first pass relies on.
ACCORD_TOOL_SCOPES="campaign.r campaign.w campaign.admin consent.r consent.w cms.r cms.w consent.audit consent.admin events.admin" \
    pass "evidence, retention and webhooks, every scope" \
    --include-path-regex '^/(consent/api/projects/[^/]+/(subjects|ledger|retention)|events/api/)'

exit "$status"
