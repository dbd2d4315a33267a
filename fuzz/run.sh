#!/usr/bin/env bash
# Runs every fuzz target for a bounded time: fuzz/run.sh BUILD_DIR SECONDS_PER_TARGET
#
# Each target starts from its checked-in seeds (fuzz/corpus/<name>) plus whatever earlier runs
# found (BUILD_DIR/corpus/<name>, where new inputs go, so the checked-in corpus never changes).
# A crash, a leak, a timeout or a sanitizer report stops the target, leaves the input in
# BUILD_DIR/artifacts/ and makes this script fail (after running the other targets).
set -uo pipefail
build=${1:?usage: fuzz/run.sh BUILD_DIR SECONDS}
seconds=${2:?usage: fuzz/run.sh BUILD_DIR SECONDS}
here="$(cd "$(dirname "$0")" && pwd)"
status=0
# Readable stacks in sanitizer reports.
for s in /usr/lib/llvm-19/bin/llvm-symbolizer "$(command -v llvm-symbolizer || true)"; do
  if [ -x "$s" ]; then export ASAN_SYMBOLIZER_PATH="$s" UBSAN_SYMBOLIZER_PATH="$s"; break; fi
done
# target:corpus:extra flags
for spec in "fuzz_pack_reader:pack:-timeout=30" "fuzz_path:path:-max_len=4200" \
            "fuzz_dir_resolver:dir:-max_len=2048" "fuzz_journal_reader:journal:-max_len=65536" \
            "fuzz_journal_records:records:-max_len=4096" "fuzz_oci:oci:-max_len=8192"; do
  IFS=: read -r target corpus flags <<<"$spec"
  work="$build/corpus/$corpus"
  mkdir -p "$work" "$build/artifacts"
  echo "fuzz: $target for ${seconds}s (seeds: fuzz/corpus/$corpus)"
  log="$build/$target.log"
  if "$build/$target" "$work" "$here/corpus/$corpus" -max_total_time="$seconds" \
       -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/artifacts/$target-" \
       $flags >"$log" 2>&1; then
    grep -E '^(Done|stat::(number_of_executed_units|average_exec_per_sec|new_units_added))' "$log" \
      | sed 's/^/  /'
  else
    status=1
    echo "fuzz: $target FAILED; the input is in $build/artifacts/, the log in $log:"
    grep -E -A40 'ERROR|invariant|deadly|Test unit written' "$log" | head -80
  fi
done
exit $status
