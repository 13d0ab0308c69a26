#!/usr/bin/env bash
# API fuzzing with schemathesis against the real server (examples/server.rs)
# over a fresh SQLite file with the demo data.
#
#   scripts/schemathesis.sh [MAX_EXAMPLES]      # default 50 per operation
#
# Builds the server, starts it on a free port of 127.0.0.1 with a random
# HS256 secret, mints a token with every scope for project `demo`, waits
# for /readyz, runs schemathesis with the checks not_a_server_error,
# status_code_conformance, content_type_conformance and
# response_schema_conformance, and stops the server. Exits non-zero when
# schemathesis finds a failure. Schemathesis (pinned below) is installed in
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

echo "== building the server"
cargo build --quiet --all-features --example server
SERVER="target/debug/examples/server"

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID"
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

PORT="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
SECRET="$("$PY" -c 'import secrets; print(secrets.token_hex(32))')"
# HS256 token: sub, exp (one hour), every scope, project demo.
TOKEN="$(SECRET="$SECRET" "$PY" - <<'PY'
import base64, hashlib, hmac, json, os, time
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
claims = b64(json.dumps({
    "sub": "schemathesis",
    "exp": int(time.time()) + 3600,
    "scope": "campaign.r campaign.w campaign.admin consent.r consent.w cms.r cms.w",
    "projects": ["demo"],
}).encode())
signed = f"{header}.{claims}".encode()
sig = hmac.new(os.environ["SECRET"].encode(), signed, hashlib.sha256).digest()
print(f"{header}.{claims}.{b64(sig)}")
PY
)"

BASE="http://127.0.0.1:$PORT"
echo "== starting the server on $BASE"
RUST_LOG="${RUST_LOG:-info}" "$SERVER" --addr "127.0.0.1:$PORT" \
    --database-url "sqlite://$WORK/accord.db" --jwt-secret "$SECRET" --demo \
    >"$WORK/server.out" 2>"$WORK/server.log" &
SERVER_PID=$!

for _ in $(seq 1 100); do
    if "$PY" -c "import sys, urllib.request; sys.exit(urllib.request.urlopen('$BASE/readyz', timeout=1).status != 200)" 2>/dev/null; then
        break
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "the server exited:" >&2
        cat "$WORK/server.log" >&2
        exit 1
    fi
    sleep 0.2
done

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
ACCORD_NOTICE_ID="$(ids svc-privacy-notice-v1)"
ACCORD_CONSENT_ID="$(ids svc-consent-v1)"
export ACCORD_NOTICE_ID ACCORD_CONSENT_ID

echo "== schemathesis $SCHEMATHESIS_VERSION, at most $MAX_EXAMPLES examples per operation"
status=0
# One worker: with two, hypothesis's lambda descriptions sometimes hit
# CPython 3.11's "AST constructor recursion depth mismatch" (an error of
# the tool, not a finding). One worker takes about 30 s.
"$ST" --config-file scripts/schemathesis.toml run "$BASE/openapi.json" \
    -H "Authorization: Bearer $TOKEN" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --max-examples "$MAX_EXAMPLES" \
    --workers 1 \
    --no-color \
    ${SCHEMATHESIS_ARGS:-} || status=$?

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
exit "$status"
