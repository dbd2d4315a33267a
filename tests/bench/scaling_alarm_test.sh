#!/usr/bin/env bash
# The complexity alarm: the categories whose complexity docs/BENCH.md promises (O(n log n) or
# better), measured at N, 4N (and 16N) by `packfs-bench --check-scaling`, which exits 1 when a
# 4x step takes 12x the time or more by median and fastest run both (O(n^2) is 16x). The mount
# table once went quadratic unseen; this is what would have caught it.
# A shared machine can stall a whole arm, so an alarm is measured again, up to three runs in all:
# the test fails only when one step (category, backend, sizes) alarms in every run. A real
# regression alarms every time; noise lands on a different step each run.
set -euo pipefail
bench="$1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() {
  "$bench" --backends mem,vfs --runs 5 --check-scaling \
    --filter mount --filter "stat files @" --filter "create files @" --filter "unlink files @" \
    --filter "readdir @" --filter "mkdir @" --filter "rmdir @" > "$out/$1.txt" 2> "$out/$1.err"
}
alarmed=""  # the steps that alarmed in every run so far, a line each
for attempt in 1 2 3; do
  rc=0
  run "$attempt" || rc=$?
  # The run must have measured what it checks: a scaling row for each category asked for.
  for key in "mount backends" "resolve, N mounts" "unmount backends" "stat files" \
             "create files" "unlink files" "readdir" "mkdir" "rmdir"; do
    grep -q "^$key  *\(mem\|vfs\)  *N -> 4N" "$out/$attempt.txt" ||
      { echo "no scaling row for $key"; cat "$out/$attempt.txt" "$out/$attempt.err"; exit 1; }
  done
  if [ "$rc" -eq 0 ]; then
    echo "no scaling alarm (run $attempt)"
    exit 0
  fi
  [ "$rc" -eq 1 ] || { echo "packfs-bench exited $rc"; cat "$out/$attempt.err"; exit 1; }
  echo "run $attempt: alarm"
  grep "scaling alarm" "$out/$attempt.err"
  steps=$(grep -o "scaling alarm: .* took" "$out/$attempt.err" | sort -u)
  if [ "$attempt" -eq 1 ]; then
    alarmed="$steps"
  else
    alarmed=$(comm -12 <(echo "$alarmed") <(echo "$steps"))
  fi
  if [ -z "$alarmed" ]; then
    echo "no step alarmed in every run: noise, not a regression"
    exit 0
  fi
done
echo "FAIL: these steps alarmed in all three runs:"
echo "$alarmed"
sed -n '/^scaling:/,/^$/p;/^category  *backend  *step/,/^$/p' "$out/3.txt"
exit 1
