# Sourced (not run) by scripts/schemathesis.sh and scripts/openapi-check.sh:
# starts the `accord` server for a tool to call.
#
#   . scripts/start-accord.sh
#   start_accord NAME     # NAME: the token's sub, in the server's records
#
# Needs PY, a Python 3 (it finds a free port). Builds the `accord` binary,
# starts `accord serve --demo` on a free port of 127.0.0.1 over a fresh
# SQLite file with a random HS256 secret, mints a token for project `demo`
# with `accord token`, and waits for /readyz. Sets BASE (the server's URL),
# TOKEN, WORK (a temporary directory: the database, server.out and
# server.log, the server's stdout and stderr) and SERVER_PID; on exit the
# server is stopped and WORK removed.

# The scopes of the token, unless the caller sets ACCORD_TOOL_SCOPES: the
# spec's, not the evidence and webhook routes' audit and admin ones (those
# routes answer 403 to it).
ACCORD_TOOL_SCOPES="${ACCORD_TOOL_SCOPES:-campaign.r campaign.w campaign.admin consent.r consent.w cms.r cms.w}"

stop_accord() {
    if [ -n "${SERVER_PID:-}" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID"
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=""
    if [ -n "${WORK:-}" ]; then
        rm -rf "$WORK"
    fi
    WORK=""
}

start_accord() {
    local sub="$1"
    echo "== building accord"
    cargo build --quiet --all-features --bin accord
    local accord="target/debug/accord"

    WORK="$(mktemp -d)"
    SERVER_PID=""
    trap stop_accord EXIT

    local port secret scope
    port="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    secret="$("$PY" -c 'import secrets; print(secrets.token_hex(32))')"
    local scopes=()
    for scope in $ACCORD_TOOL_SCOPES; do
        scopes+=(--scope "$scope")
    done
    TOKEN="$("$accord" token --project demo --sub "$sub" --ttl 1h --jwt-secret "$secret" "${scopes[@]}")"

    BASE="http://127.0.0.1:$port"
    echo "== starting accord on $BASE"
    RUST_LOG="${RUST_LOG:-info}" "$accord" serve --addr "127.0.0.1:$port" \
        --database-url "sqlite://$WORK/accord.db" --jwt-secret "$secret" --demo \
        >"$WORK/server.out" 2>"$WORK/server.log" &
    SERVER_PID=$!

    local _
    for _ in $(seq 1 100); do
        if "$PY" -c "import sys, urllib.request; sys.exit(urllib.request.urlopen('$BASE/readyz', timeout=1).status != 200)" 2>/dev/null; then
            return 0
        fi
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            echo "the server exited:" >&2
            cat "$WORK/server.log" >&2
            exit 1
        fi
        sleep 0.2
    done
    echo "the server did not become ready in 20 s:" >&2
    cat "$WORK/server.log" >&2
    exit 1
}
