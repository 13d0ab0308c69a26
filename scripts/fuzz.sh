#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for SECONDS each (default 60), one
# after another, single job; fails if any target finds a crash.
#
#   scripts/fuzz.sh          # 60 s per target
#   scripts/fuzz.sh 600      # 10 min per target
#   TARGETS="formula campaign" scripts/fuzz.sh 30
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). On a stable toolchain the
# sanitizer flags need RUSTC_BOOTSTRAP=1, which this script sets. New
# corpus entries go to fuzz/corpus/<target>/ (only seed-* files are
# committed); crashes to fuzz/artifacts/<target>/. Logs: fuzz/logs/.
set -euo pipefail

seconds="${1:-60}"
cd "$(dirname "$0")/../fuzz"
export RUSTC_BOOTSTRAP=1
targets="${TARGETS:-$(cargo fuzz list)}"
mkdir -p logs
cargo fuzz build

failed=()
for target in $targets; do
    mkdir -p "corpus/$target"
    echo "== $target: ${seconds}s"
    dict=()
    if [ -f "dict/$target.dict" ]; then dict=("-dict=dict/$target.dict"); fi
    if cargo fuzz run "$target" -- -max_total_time="$seconds" \
        "${dict[@]}" >"logs/$target.log" 2>&1; then
        grep -E '^(#[0-9]+\s+DONE|Done [0-9]+ runs)' "logs/$target.log" | tail -2 || true
    else
        echo "!! $target FAILED; see fuzz/logs/$target.log and fuzz/artifacts/$target/"
        tail -30 "logs/$target.log"
        failed+=("$target")
    fi
done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "crashes found in: ${failed[*]}"
    exit 1
fi
echo "no crash in:" $targets
