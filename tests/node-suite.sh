#!/usr/bin/env bash
# Runs a Node test suite (node --test) and prints one closing line with its
# counts and time; the full report (spec) goes to build/test-reports/NAME.txt,
# and is printed only when something failed.
#   usage: tests/node-suite.sh NAME DIR FILE...   (FILEs relative to DIR)
set -uo pipefail
name="$1"; dir="$2"; shift 2
root="$(cd "$(dirname "$0")/.." && pwd)"
reports="$root/build/test-reports"
mkdir -p "$reports"
spec="$reports/$name.txt"
junit="$reports/$name.xml"
start=$(date +%s.%N)
(cd "$dir" && node --test --test-concurrency=1 \
  --test-reporter=spec --test-reporter-destination="$spec" \
  --test-reporter=junit --test-reporter-destination="$junit" "$@") >"$reports/$name.out" 2>&1
status=$?
elapsed=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.0f}')" "$start" "$(date +%s.%N)")
python3 - "$name" "$junit" "$elapsed" "$status" <<'PY'
import sys
import xml.etree.ElementTree as ET

name, path, elapsed, status = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
try:
    cases = list(ET.parse(path).getroot().iter("testcase"))
except (OSError, ET.ParseError):
    cases = []
# A suite (describe) is a testcase holding others: count the leaves only.
leaves = [c for c in cases if c.find("testcase") is None]
failed = sum(1 for c in leaves if c.find("failure") is not None or c.find("error") is not None)
skipped = sum(1 for c in leaves if c.find("skipped") is not None)
passed = len(leaves) - failed - skipped
verdict = "ok" if status == 0 else "FAILED"
print(f"{name}: {passed} passed, {failed} failed, {skipped} skipped in {elapsed} s ({verdict})")
PY
if [ $status -ne 0 ]; then
  echo "--- $name: the report ($spec) ---"
  cat "$spec" "$reports/$name.out"
fi
exit $status
