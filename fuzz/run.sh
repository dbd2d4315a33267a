#!/usr/bin/env bash
# Runs every fuzz target for a bounded time: fuzz/run.sh BUILD_DIR SECONDS_PER_TARGET
#
# Each target starts from its checked-in seeds (fuzz/corpus/<name>) plus whatever earlier runs
# found (BUILD_DIR/corpus/<name>, where new inputs go, so the checked-in corpus never changes).
# A crash, a leak, a timeout or a sanitizer report stops the target, leaves the input in
# BUILD_DIR/artifacts/ and makes this script fail (after running the other targets).
# Targets run FUZZ_JOBS at a time (default: the number of cores), each on one core; the
# reports come out in the list's order.
set -uo pipefail
build=${1:?usage: fuzz/run.sh BUILD_DIR SECONDS}
seconds=${2:?usage: fuzz/run.sh BUILD_DIR SECONDS}
jobs=${FUZZ_JOBS:-$(nproc)}
here="$(cd "$(dirname "$0")" && pwd)"
# Readable stacks in sanitizer reports.
for s in /usr/lib/llvm-19/bin/llvm-symbolizer "$(command -v llvm-symbolizer || true)"; do
  if [ -x "$s" ]; then export ASAN_SYMBOLIZER_PATH="$s" UBSAN_SYMBOLIZER_PATH="$s"; break; fi
done
# target:corpus:extra flags
specs=("fuzz_pack_reader:pack:-timeout=30" "fuzz_path:path:-max_len=4200"
       "fuzz_dir_resolver:dir:-max_len=2048" "fuzz_journal_reader:journal:-max_len=65536"
       "fuzz_journal_records:records:-max_len=4096" "fuzz_oci:oci:-max_len=8192")
mkdir -p "$build/artifacts"

# One target, its log in $build/<target>.log and its exit status in $build/<target>.status.
fuzz_one() {
  local target=$1 corpus=$2 flags=$3
  local work="$build/corpus/$corpus"
  mkdir -p "$work"
  "$build/$target" "$work" "$here/corpus/$corpus" -max_total_time="$seconds" \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/artifacts/$target-" \
    $flags >"$build/$target.log" 2>&1
  echo $? >"$build/$target.status"
}

running=0
for spec in "${specs[@]}"; do
  IFS=: read -r target corpus flags <<<"$spec"
  echo "fuzz: $target for ${seconds}s (seeds: fuzz/corpus/$corpus)"
  fuzz_one "$target" "$corpus" "$flags" &
  if (( ++running >= jobs )); then
    wait -n
    (( --running ))
  fi
done
wait

status=0
for spec in "${specs[@]}"; do
  IFS=: read -r target corpus flags <<<"$spec"
  log="$build/$target.log"
  if [ "$(cat "$build/$target.status" 2>/dev/null)" = 0 ]; then
    echo "fuzz: $target"
    grep -E '^(Done|stat::(number_of_executed_units|average_exec_per_sec|new_units_added))' "$log" \
      | sed 's/^/  /'
  else
    status=1
    echo "fuzz: $target FAILED; the input is in $build/artifacts/, the log in $log:"
    grep -E -A40 'ERROR|invariant|deadly|Test unit written' "$log" | head -80
  fi
done
exit $status
