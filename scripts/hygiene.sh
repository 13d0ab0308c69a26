#!/usr/bin/env bash
# Repository hygiene, run by CI (.ci/run):
#
#   1. the licence: LICENSE-MIT and LICENSE-APACHE exist and Cargo.toml
#      says `license = "MIT OR Apache-2.0"`;
#   2. MSRV: `rust-version` of Cargo.toml is no lower than the highest
#      `rust-version` of the crates a build of the library resolves to on
#      this platform (every feature, dev-dependencies aside), from
#      Cargo.lock;
#   3. unused dependencies: cargo-machete over the crate, the fuzz crate
#      and the peers benchmark (each its own workspace);
#   4. cargo-deny: licences, bans and sources (deny.toml);
#   5. each feature builds alone, without warnings: cargo hack check
#      --each-feature --no-dev-deps (bounded by HYGIENE_HACK_TIMEOUT
#      seconds, default 1500).
#
#   scripts/hygiene.sh
#
# The cargo tools (pinned below) are installed with `cargo install
# --locked` on first use. Exits non-zero on the first finding.
set -euo pipefail
cd "$(dirname "$0")/.."

MACHETE_VERSION=0.9.2
DENY_VERSION=0.20.2
HACK_VERSION=0.6.46
PYTHON="${PYTHON:-python3}"

install() {
    local tool="$1" version="$2"
    if [ "$(cargo "${tool#cargo-}" --version 2>&1 | awk '{print $NF}')" != "$version" ]; then
        echo "== cargo install --locked $tool@$version"
        cargo install --locked --quiet "$tool@$version"
    fi
}

echo "== licence files"
for f in LICENSE-MIT LICENSE-APACHE; do
    [ -s "$f" ] || { echo "$f is missing" >&2; exit 1; }
done
grep -qx 'license = "MIT OR Apache-2.0"' Cargo.toml || {
    echo 'Cargo.toml lacks license = "MIT OR Apache-2.0"' >&2
    exit 1
}

echo "== MSRV: rust-version against the resolved dependency tree"
mkdir -p target
cargo metadata --quiet --format-version 1 --all-features --locked \
    --filter-platform "$(rustc -vV | sed -n 's/^host: //p')" >target/hygiene-metadata.json
"$PYTHON" - target/hygiene-metadata.json <<'PY'
import json, sys

meta = json.load(open(sys.argv[1]))
packages = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
root = meta["resolve"]["root"]

def version(v):
    parts = [int(x) for x in (v or "0").split(".")]
    return tuple(parts + [0] * (3 - len(parts)))

# Crates a build of the library needs: normal and build dependencies,
# transitively (dev-dependencies only build the tests).
seen, todo = set(), [root]
while todo:
    node = nodes[todo.pop()]
    for dep in node["deps"]:
        if any(k["kind"] in (None, "build") for k in dep["dep_kinds"]) and dep["pkg"] not in seen:
            seen.add(dep["pkg"])
            todo.append(dep["pkg"])

declared = packages[root].get("rust_version")
if not declared:
    sys.exit("Cargo.toml declares no rust-version")
needs = sorted(
    ((version(packages[p].get("rust_version")), packages[p]["name"], packages[p]["version"]) for p in seen),
    reverse=True,
)
highest = needs[0]
print(f"rust-version {declared}; the dependencies need at most "
      f"{'.'.join(map(str, highest[0]))} ({highest[1]} {highest[2]}); {len(seen)} crates")
if version(declared) < highest[0]:
    too_new = [f"{n} {v} needs {'.'.join(map(str, r))}" for r, n, v in needs if r > version(declared)]
    sys.exit("rust-version is lower than the dependencies need:\n  " + "\n  ".join(too_new))
PY

install cargo-machete "$MACHETE_VERSION"
echo "== cargo machete (unused dependencies)"
cargo machete

install cargo-deny "$DENY_VERSION"
echo "== cargo deny check licenses bans sources"
cargo deny --log-level error check licenses bans sources

install cargo-hack "$HACK_VERSION"
echo "== cargo hack check --each-feature --no-dev-deps"
# Warnings count: a feature alone must not leave code unused.
timeout "${HYGIENE_HACK_TIMEOUT:-1500}" \
    cargo hack check --each-feature --no-dev-deps 2>&1 | tee target/hygiene-hack.log
if grep -q "^warning" target/hygiene-hack.log; then
    echo "warnings with a feature alone (above)" >&2
    exit 1
fi
