#!/usr/bin/env bash
# `packfs-bench` end to end, briefly: a quick run of two categories must succeed, print the
# table, and write JSON records with exactly the documented fields; bad usage exits 2.
set -euo pipefail
bench="$1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bench" --quick --runs 3 --backends mem,raw --filter stat --filter readdir \
  --json "$out/b.json" > "$out/table.txt"
grep -q "stat files  *mem" "$out/table.txt" || { echo "no mem stat row"; cat "$out/table.txt"; exit 1; }
grep -q "readdir  *raw" "$out/table.txt" || { echo "no raw readdir row"; exit 1; }
grep -q "stat files, 2 threads  *mem" "$out/table.txt" || { echo "no mem 2-thread stat row"; exit 1; }
python3 - "$out/b.json" <<'PY'
import json, sys
records = json.load(open(sys.argv[1]))
fields = ["category", "backend", "n", "runs", "median_s", "min_s", "max_s", "ops_per_s", "mb_per_s"]
# "stat" selects "stat files" and "stat files, 2 threads"; with readdir, 3 categories x 2 backends.
assert len(records) == 6, f"expected 6 figures, got {len(records)}"
for r in records:
    assert list(r.keys()) == fields, f"fields {list(r.keys())}"
    assert r["backend"] in ("mem", "raw"), r["backend"]
    assert r["runs"] == 3 and r["n"] > 0, r
    assert 0 < r["min_s"] <= r["median_s"] <= r["max_s"], r
    assert abs(r["ops_per_s"] - r["n"] / r["median_s"]) < 1e-6 * r["ops_per_s"], r
print("json ok:", len(records), "records")
PY
# Progress reaches stderr even when it is not a terminal (here a file): a line at each group's
# start, "packfs-bench: [i/total] category, ..., N s elapsed"; none of it on stdout.
"$bench" --quick --runs 1 --backends mem,raw --filter readdir > "$out/progress.txt" \
  2> "$out/progress.err"
grep -q "^packfs-bench: \[[0-9]*/[0-9]*\] readdir.* s elapsed" "$out/progress.err" ||
  { echo "no progress line on a non-terminal stderr"; cat "$out/progress.err"; exit 1; }
if grep -q "s elapsed" "$out/progress.txt"; then echo "progress on stdout"; exit 1; fi
# A disk-bound arm cut by its time budget (a tenth of a millisecond: no disk makes 1,000
# directories in that) is marked in the table and says what it did; mem is never bounded.
"$bench" --quick --runs 1 --backends mem,raw --filter mkdir --disk-budget 0.0001 \
  > "$out/bounded.txt" 2> /dev/null
grep -q "^mkdir  *raw  *[0-9,]*\*" "$out/bounded.txt" ||
  { echo "no time-bounded mark on raw mkdir"; cat "$out/bounded.txt"; exit 1; }
grep -q "^\* time-bounded: mkdir on raw: [0-9,]* of 1,000 ops per run" "$out/bounded.txt" ||
  { echo "no time-bounded note"; cat "$out/bounded.txt"; exit 1; }
if grep -q "time-bounded: mkdir on mem" "$out/bounded.txt"; then echo "mem bounded"; exit 1; fi
# The pack section's raw files are made once, by a setup under the same budget: its raw arm
# reads what was made, marked as cut; the pack arms read every entry.
"$bench" --quick --runs 1 --backends raw,pack --filter random-read --disk-budget 0.0001 \
  > "$out/pack-bounded.txt" 2> /dev/null
grep -q "^random-read 2k entries  *raw  *[0-9,]*\*" "$out/pack-bounded.txt" ||
  { echo "no time-bounded mark on raw random-read"; cat "$out/pack-bounded.txt"; exit 1; }
grep -q "^\* time-bounded: random-read 2k entries on raw: [0-9,]* of 2,000 ops per run" \
  "$out/pack-bounded.txt" || { echo "no time-bounded note for random-read"; exit 1; }
if grep -q "time-bounded: random-read 2k entries on pack" "$out/pack-bounded.txt"; then
  echo "pack bounded"; exit 1
fi
# --full takes no budget: nothing is marked.
"$bench" --full --runs 1 --backends mem,raw --filter mkdir > "$out/full.txt" 2> /dev/null
if grep -q "time-bounded" "$out/full.txt"; then echo "--full bounded something"; exit 1; fi
set +e
"$bench" --quick --full > /dev/null 2>&1
code=$?
set -e
[ "$code" -eq 2 ] || { echo "--quick --full exited $code, expected 2"; exit 1; }
set +e
"$bench" --runs notanumber > /dev/null 2>&1
code=$?
set -e
[ "$code" -eq 2 ] || { echo "usage error exited $code, expected 2"; exit 1; }
echo "bench smoke ok"
