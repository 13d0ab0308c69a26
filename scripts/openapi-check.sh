#!/usr/bin/env bash
# Checks the OpenAPI document the server serves, as a client author would:
#
#   1. openapi-spec-validator: the document is valid OpenAPI 3.1;
#   2. Spectral, with the committed ruleset .spectral.yaml: no error and no
#      warning;
#   3. openapi-python-client generates a client from it, and
#      scripts/openapi_replay.py replays the README walkthrough through that
#      client against the server (with `--demo` data), checking every
#      response against the document's schema for its status.
#
#   scripts/openapi-check.sh
#
# Builds and starts the server on a free port of 127.0.0.1 over a fresh
# SQLite file, with a random HS256 secret and a token minted here; stops it
# at the end. The tools (pinned below) are installed on first use, under
# target/: the Python ones in a venv from PyPI, Spectral from the npm
# registry (needs Node.js 18 or later). Exits non-zero on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="target/openapi-venv"
SPECTRAL_DIR="target/spectral"
PY_TOOLS="openapi-spec-validator==0.9.0 openapi-python-client==0.29.1 jsonschema==4.26.0"
SPECTRAL_VERSION=6.16.3

PY="$VENV/bin/python"
if [ ! -f "$VENV/.tools" ] || [ "$(cat "$VENV/.tools")" != "$PY_TOOLS" ]; then
    echo "== installing $PY_TOOLS in $VENV"
    "$PYTHON" -m venv "$VENV"
    # shellcheck disable=SC2086
    "$VENV/bin/pip" install --quiet --disable-pip-version-check $PY_TOOLS
    echo "$PY_TOOLS" >"$VENV/.tools"
fi
SPECTRAL="$SPECTRAL_DIR/node_modules/.bin/spectral"
if ! "$SPECTRAL" --version 2>/dev/null | grep -qx "$SPECTRAL_VERSION"; then
    echo "== installing @stoplight/spectral-cli $SPECTRAL_VERSION in $SPECTRAL_DIR"
    mkdir -p "$SPECTRAL_DIR"
    npm install --prefix "$SPECTRAL_DIR" --no-audit --no-fund --silent \
        "@stoplight/spectral-cli@$SPECTRAL_VERSION"
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
    "sub": "openapi-check",
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
"$SERVER" --addr "127.0.0.1:$PORT" --database-url "sqlite://$WORK/accord.db" \
    --jwt-secret "$SECRET" --demo >"$WORK/server.out" 2>"$WORK/server.log" &
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

DOC="$WORK/openapi.json"
"$PY" -c "import urllib.request; open('$DOC', 'wb').write(urllib.request.urlopen('$BASE/openapi.json', timeout=10).read())"

echo "== openapi-spec-validator"
"$VENV/bin/openapi-spec-validator" "$DOC"

echo "== spectral lint (.spectral.yaml)"
"$SPECTRAL" lint --ruleset .spectral.yaml --fail-severity warn "$DOC"

echo "== openapi-python-client: generating a client"
cat >"$WORK/generator.yaml" <<'YAML'
post_hooks: []
YAML
"$VENV/bin/openapi-python-client" generate --path "$DOC" --meta none \
    --config "$WORK/generator.yaml" --output-path "$WORK/client/accord_client" >"$WORK/generate.log" 2>&1 || {
    cat "$WORK/generate.log" >&2
    exit 1
}
if grep -qi "warning\|error" "$WORK/generate.log"; then
    echo "the generator reported problems:" >&2
    cat "$WORK/generate.log" >&2
    exit 1
fi

echo "== replaying the README walkthrough through the generated client"
PYTHONPATH="$WORK/client" "$PY" scripts/openapi_replay.py "$BASE" "$TOKEN" "$DOC"
