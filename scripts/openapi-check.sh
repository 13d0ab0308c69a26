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
# Starts the `accord` server on a free port of 127.0.0.1 over a fresh
# SQLite file, with a random HS256 secret and a token minted by `accord
# token` (scripts/start-accord.sh); stops it at the end. The tools (pinned below) are installed on first use, under
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

. scripts/start-accord.sh
start_accord openapi-check

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
# The generator reads no JSON Lines (`application/jsonl`, the ledger
# export): it omits those responses, with a warning. It also models no raw
# upload body: the CSV import of a code pool (`text/csv`) and a consent
# screen's bytes (PNG, JPEG, PDF, HTML), whose endpoints it skips, with a
# warning. Any other warning or error fails.
if ! "$PY" - "$WORK/generate.log" <<'PY'
import re, sys
log = open(sys.argv[1], encoding="utf-8").read()
blocks = re.split(r"(?=WARNING parsing|ERROR)", log)[1:]
uploads = {"text/csv", "image/png", "image/jpeg", "application/pdf", "text/html"}
def allowed(block):
    if "Unsupported content_type application/jsonl" in block:
        return True
    types = re.findall(r"Unsupported content type (\S+)", block)
    return bool(types) and set(types) <= uploads
if not all(allowed(b) for b in blocks):
    sys.exit(1)
PY
then
    echo "the generator reported problems:" >&2
    cat "$WORK/generate.log" >&2
    exit 1
fi

echo "== replaying the README walkthrough through the generated client"
PYTHONPATH="$WORK/client" "$PY" scripts/openapi_replay.py "$BASE" "$TOKEN" "$DOC"
