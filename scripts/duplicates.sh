#!/usr/bin/env bash
# The copy-paste check of the SQL stores: SQLite and PostgreSQL share one
# implementation (src/store/sql/), and each dialect folder holds only what
# is its own. Fails on any block of 6 or more lines (and 30 tokens) that
# a dialect folder (src/store/sqlite/, src/store/postgres/) repeats, from
# the other dialect, from itself or from the shared code. The migrations
# are SQL per database and are not checked.
#
#   scripts/duplicates.sh
#
# jscpd (pinned below) is installed on first use under target/, from the
# npm registry (needs Node.js 18 or later). Prints every clone it finds in
# src/store, and exits non-zero on those of the dialect folders.
set -euo pipefail
cd "$(dirname "$0")/.."

JSCPD_VERSION=4.0.5
JSCPD_DIR="target/jscpd"
JSCPD="$JSCPD_DIR/node_modules/.bin/jscpd"
if ! "$JSCPD" --version 2>/dev/null | grep -qx "$JSCPD_VERSION"; then
    echo "== installing jscpd $JSCPD_VERSION in $JSCPD_DIR"
    mkdir -p "$JSCPD_DIR"
    npm install --prefix "$JSCPD_DIR" --no-audit --no-fund --silent "jscpd@$JSCPD_VERSION"
fi

REPORT="$(mktemp -d)"
trap 'rm -rf "$REPORT"' EXIT
"$JSCPD" --min-lines 6 --min-tokens 30 --format rust --reporters json \
    --output "$REPORT" --silent src/store >/dev/null

node - "$REPORT/jscpd-report.json" <<'JS'
const report = require(process.argv[2]);
const dialect = /^src\/store\/(sqlite|postgres)\//;
let failed = 0;
for (const c of report.duplicates) {
  const [a, b] = [c.firstFile, c.secondFile];
  const bad = dialect.test(a.name) || dialect.test(b.name);
  if (bad) failed++;
  console.log(`${bad ? "DIALECT CLONE" : "clone"} (${c.lines} lines): ` +
    `${a.name}:${a.start}-${a.end} = ${b.name}:${b.start}-${b.end}`);
}
console.log(`${report.duplicates.length} clones in src/store; ${failed} involve a dialect folder`);
process.exit(failed ? 1 : 0);
JS
