#!/usr/bin/env bash
# Image builds against the peers (docs/BENCH.md, "Packs (issue 4)"): `packfs build` (raw,
# zstd, lz4) against mksquashfs (gzip, zstd) and mkfs.erofs (uncompressed, lz4hc) on one
# realistic tree, and extraction (`packfs extract` against unsquashfs and fsck.erofs
# --extract). Every configuration runs --runs times (default 3), interleaved: round 1 in the
# order below, round 2 reversed, and so on; each figure is the median with min and max.
#
#   bench/image_compare.sh [--packfs PATH] [--runs N] [--jobs N] [--work DIR]
#                          [--source DIR]... [--fresh-tree] [--no-extract] [--no-level-match]
#                          [--only CONFIGS] [--extract-only] [--extract-dir DIR] [--report-only]
#
# --packfs      the packfs binary (default build/tools/cli/packfs beside this script, or $PACKFS)
# --jobs        worker threads of every tool that has them (packfs --jobs, mksquashfs
#               -processors, unsquashfs -processors); default: the CPUs (nproc)
# --work        scratch directory (default ${TMPDIR:-/tmp}/packfs-image-compare); the tree is
#               copied to WORK/tree once and reused by later runs unless --fresh-tree
# --source      directories copied into the tree (default /usr/share and /usr/include)
# --no-extract  builds only
# --no-level-match   skip `packfs build --compress zstd:15` (mksquashfs's zstd level)
# --only        build only these configurations (comma-separated: packfs, packfs-zstd,
#               packfs-lz4, packfs-zstd15, squashfs-gzip, squashfs-zstd, erofs, erofs-lz4hc)
# --extract-only     no builds: extract from the images an earlier run left in WORK/images
#               (its build figures are kept in the report)
# --extract-dir where extractions go (default WORK/out); e.g. a tmpfs, to time the tools
#               without the disk's writeback
# --report-only print the tables again from WORK/results.tsv of an earlier run
#
# Timing: "build" is the tool's own wall time; "durable" adds `sync IMAGE` (fsync of the image)
# after it, since packfs build fsyncs its output and renames it into place and the others do
# not. Each build and extraction starts after a global `sync`, so no writeback of the previous
# one lands in it. The tree is read from the page cache (it was just copied; nothing is
# dropped). Needs squashfs-tools and erofs-utils (scripts/install-deps.sh installs them).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
packfs=${PACKFS:-$here/../build/tools/cli/packfs}
runs=3
jobs=$(nproc)
work=${TMPDIR:-/tmp}/packfs-image-compare
sources=()
fresh=0
extract=1
level_match=1
report_only=0
extract_only=0
only=""

die() { echo "image_compare: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --packfs) packfs=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --source) sources+=("$2"); shift 2 ;;
    --fresh-tree) fresh=1; shift ;;
    --no-extract) extract=0; shift ;;
    --no-level-match) level_match=0; shift ;;
    --report-only) report_only=1; shift ;;
    --extract-only) extract_only=1; shift ;;
    --only) only=$2; shift 2 ;;
    --extract-dir) out_dir_arg=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ ${#sources[@]} -gt 0 ] || sources=(/usr/share /usr/include)
[ -x "$packfs" ] || die "no packfs binary at $packfs (build it, or pass --packfs)"
for tool in mksquashfs unsquashfs mkfs.erofs fsck.erofs; do
  command -v "$tool" >/dev/null || die "$tool is missing: run scripts/install-deps.sh"
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "--runs must be a positive number"

mkdir -p "$work"
tree=$work/tree
images=$work/images
out_dir=${out_dir_arg:-$work/out}
results=$work/results.tsv
if [ "$extract_only" = 1 ]; then
  [ -s "$results" ] || die "--extract-only: no earlier run in $work"
  grep -v $'^extract\t' "$results" > "$results.tmp" || true
  mv "$results.tmp" "$results"
elif [ "$report_only" = 0 ]; then
  : > "$results"
fi

# --- the tree ---------------------------------------------------------------------------
stamp="${sources[*]}"
if [ "$fresh" = 1 ] || [ ! -f "$work/tree.done" ] || [ "$(cat "$work/tree.done")" != "$stamp" ]; then
  rm -rf "$tree" "$work/tree.done"
  mkdir -p "$tree"
  for s in "${sources[@]}"; do
    echo "copying $s into $tree/$(basename "$s") ..." >&2
    cp -a "$s" "$tree/$(basename "$s")"
  done
  echo "$stamp" > "$work/tree.done"
fi
sync

count() { find "$tree" "$@" | wc -l; }
entries=$(count -mindepth 1)
files=$(count -type f)
dirs=$(count -mindepth 1 -type d)
links=$(count -type l)
hardlinked=$(count -type f -links +1)
file_bytes=$(find "$tree" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f", s}')
unique_bytes=$(find "$tree" -type f -printf '%i %s\n' | sort -u | awk '{s += $2} END {printf "%.0f", s}')

# --- helpers ------------------------------------------------------------------------------
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.4f", b - a}'; }

configs=(packfs packfs-zstd packfs-lz4)
[ "$level_match" = 1 ] && configs+=(packfs-zstd15)
configs+=(squashfs-gzip squashfs-zstd erofs erofs-lz4hc)
if [ -n "$only" ]; then
  for c in ${only//,/ }; do
    [[ " ${configs[*]} packfs-zstd15 " == *" $c "* ]] || die "--only: unknown configuration '$c'"
  done
  configs=(${only//,/ })
fi

describe() {
  case "$1" in
    packfs) echo "packfs build (uncompressed)" ;;
    packfs-zstd) echo "packfs build --compress zstd" ;;
    packfs-lz4) echo "packfs build --compress lz4" ;;
    packfs-zstd15) echo "packfs build --compress zstd:15" ;;
    squashfs-gzip) echo "mksquashfs -comp gzip" ;;
    squashfs-zstd) echo "mksquashfs -comp zstd" ;;
    erofs) echo "mkfs.erofs (uncompressed)" ;;
    erofs-lz4hc) echo "mkfs.erofs -zlz4hc" ;;
  esac
}

# build CONFIG IMAGE: the build command, its output to $work/last.log.
build() {
  local img=$2
  case "$1" in
    packfs) "$packfs" build --jobs "$jobs" --json "$tree" "$img" ;;
    packfs-zstd) "$packfs" build --jobs "$jobs" --json --compress zstd "$tree" "$img" ;;
    packfs-lz4) "$packfs" build --jobs "$jobs" --json --compress lz4 "$tree" "$img" ;;
    packfs-zstd15) "$packfs" build --jobs "$jobs" --json --compress zstd:15 "$tree" "$img" ;;
    squashfs-gzip) mksquashfs "$tree" "$img" -comp gzip -processors "$jobs" -noappend -quiet -no-progress ;;
    squashfs-zstd) mksquashfs "$tree" "$img" -comp zstd -processors "$jobs" -noappend -quiet -no-progress ;;
    erofs) mkfs.erofs --quiet "$img" "$tree" ;;
    erofs-lz4hc) mkfs.erofs --quiet -zlz4hc "$img" "$tree" ;;
  esac > "$work/last.log" 2>&1
}

# From packfs build --json, if python3 is here: the phases (scan, hash, data, finish seconds),
# then the bytes of the data region, of the metadata, and of the distinct file contents.
phases() {
  command -v python3 >/dev/null || return 0
  python3 - "$work/last.log" <<'EOF' 2>/dev/null || true
import json, sys
text = open(sys.argv[1]).read()
doc = json.loads(text[text.index('{'):])
p = doc.get("phases_s", {})
s = doc.get("stats", {})
print("\t".join(["%.4f" % p.get(k, 0) for k in ("scan", "hash", "data", "finish")] +
                ["%d" % s.get(k, 0) for k in ("data_bytes", "metadata_bytes", "unique_bytes")]))
EOF
}

rounds_order() {  # round index -> the configs in this round's order
  local r=$1; shift
  if [ $((r % 2)) = 0 ]; then printf '%s\n' "$@"; else printf '%s\n' "$@" | tac; fi
}

# --- builds -------------------------------------------------------------------------------
build_runs=$runs
if [ "$report_only" = 1 ] || [ "$extract_only" = 1 ]; then
  build_runs=$(awk -F'\t' '$1 == "build" && $3 + 1 > r {r = $3 + 1} END {print r + 0}' "$results")
  grep -q $'^build\tpackfs-zstd15\t' "$results" || level_match=0
  configs=($(awk -F'\t' '$1 == "build" && !seen[$2]++ {print $2}' "$results"))
  [ "$report_only" = 0 ] || extract=0
fi
[ "$report_only" = 1 ] || [ "$extract_only" = 1 ] || { rm -rf "$images"; mkdir -p "$images"; }
[ "$report_only" = 1 ] || [ "$extract_only" = 1 ] || echo "building: ${configs[*]}; $runs rounds, interleaved" >&2
for ((r = 0; r < runs && report_only == 0 && extract_only == 0; r++)); do
  while read -r c; do
    img=$images/$c.img
    rm -f "$img"; sync
    t0=$(now)
    build "$c" "$img" || { cat "$work/last.log" >&2; die "$(describe "$c") failed"; }
    t1=$(now)
    sync "$img"
    t2=$(now)
    size=$(stat -c %s "$img")
    p=""
    case "$c" in packfs*) p=$(phases) ;; esac
    printf 'build\t%s\t%d\t%s\t%s\t%s\t%s\n' "$c" "$r" "$(elapsed "$t0" "$t1")" "$(elapsed "$t0" "$t2")" "$size" "$p" >> "$results"
    echo "  round $((r + 1)): $(describe "$c"): $(elapsed "$t0" "$t1") s, $size bytes" >&2
  done < <(rounds_order "$r" "${configs[@]}")
done

# --- extraction ---------------------------------------------------------------------------
extractors=()
if [ "$extract" = 1 ]; then
  if "$packfs" extract --help >/dev/null 2>&1; then
    extractors+=(x-packfs x-packfs-zstd)
  else
    echo "packfs extract does not exist in $packfs: extraction compares the peers only" >&2
  fi
  extractors+=(x-squashfs-gzip x-squashfs-zstd x-erofs x-erofs-lz4hc)
  present=()
  for x in "${extractors[@]}"; do [ -f "$images/${x#x-}.img" ] && present+=("$x"); done
  extractors=(${present[@]+"${present[@]}"})
fi
[ "$report_only" = 0 ] || extractors=($(awk -F'\t' '$1 == "extract" && !seen[$2]++ {print $2}' "$results"))
unpack() {  # EXTRACTOR DEST
  local dest=$2
  case "$1" in
    x-packfs) "$packfs" extract "$images/packfs.img" "$dest" ;;
    x-packfs-zstd) "$packfs" extract "$images/packfs-zstd.img" "$dest" ;;
    x-squashfs-gzip) unsquashfs -q -n -processors "$jobs" -d "$dest" "$images/squashfs-gzip.img" ;;
    x-squashfs-zstd) unsquashfs -q -n -processors "$jobs" -d "$dest" "$images/squashfs-zstd.img" ;;
    x-erofs) fsck.erofs --extract="$dest" "$images/erofs.img" ;;
    x-erofs-lz4hc) fsck.erofs --extract="$dest" "$images/erofs-lz4hc.img" ;;
  esac > "$work/last.log" 2>&1
}
describe_x() {
  case "$1" in
    x-packfs) echo "packfs extract (uncompressed pack)" ;;
    x-packfs-zstd) echo "packfs extract (zstd pack)" ;;
    x-squashfs-gzip) echo "unsquashfs (gzip image)" ;;
    x-squashfs-zstd) echo "unsquashfs (zstd image)" ;;
    x-erofs) echo "fsck.erofs --extract (uncompressed image)" ;;
    x-erofs-lz4hc) echo "fsck.erofs --extract (lz4hc image)" ;;
  esac
}
if [ ${#extractors[@]} -gt 0 ] && [ "$report_only" = 0 ]; then
  echo "extracting: ${extractors[*]}; $runs rounds, interleaved" >&2
  for ((r = 0; r < runs; r++)); do
    while read -r x; do
      rm -rf "$out_dir"; sync
      t0=$(now)
      unpack "$x" "$out_dir" || { cat "$work/last.log" >&2; die "$(describe_x "$x") failed"; }
      t1=$(now)
      sync
      t2=$(now)
      got=$(find "$out_dir" -mindepth 1 | wc -l)
      [ "$got" = "$entries" ] || echo "  warning: $(describe_x "$x") made $got entries, the tree has $entries" >&2
      printf 'extract\t%s\t%d\t%s\t%s\t%s\t\n' "$x" "$r" "$(elapsed "$t0" "$t1")" "$(elapsed "$t0" "$t2")" "$got" >> "$results"
      echo "  round $((r + 1)): $(describe_x "$x"): $(elapsed "$t0" "$t1") s" >&2
    done < <(rounds_order "$r" "${extractors[@]}")
  done
  rm -rf "$out_dir"
fi

# --- report -------------------------------------------------------------------------------
# stat KIND NAME COLUMN: "median min max" of a column over the runs.
stat_of() {
  awk -F'\t' -v k="$1" -v n="$2" -v c="$3" '$1 == k && $2 == n {print $c}' "$results" | sort -g |
    awk '{v[NR] = $1} END {if (NR == 0) exit; m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
         printf "%s %s %s\n", m, v[1], v[NR]}'
}
fmt_s() { awk -v m="$1" -v lo="$2" -v hi="$3" 'BEGIN {printf "%.2f s (%.2f-%.2f)", m, lo, hi}'; }
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }

echo
echo "image_compare: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load $(cut -d' ' -f1-3 /proc/loadavg)"
pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "?"; }
echo "tools: $packfs | squashfs-tools $(pkg_version squashfs-tools) | erofs-utils $(pkg_version erofs-utils)"
pack_unique=$(awk -F'\t' '$1 == "build" && $2 == "packfs" && $13 != "" {print $13; exit}' "$results")
echo "tree: ${sources[*]} copied to $tree: $entries entries ($files regular files, $dirs directories, $links symlinks, $hardlinked files with hard links), $(mib "$file_bytes") of file data ($(mib "$unique_bytes") counting each inode once${pack_unique:+; $(mib "$pack_unique") of distinct contents after packfs dedup})"
echo "jobs: $jobs (packfs --jobs, mksquashfs -processors, unsquashfs -processors; mkfs.erofs $(pkg_version erofs-utils) is single-threaded); $build_runs build runs, interleaved; median (min-max)"
echo
echo "| image | build | build + fsync of the image | size | packfs: phases scan / hash / data / finish (median s); data + metadata |"
echo "| --- | --- | --- | --- | --- |"
for c in "${configs[@]}"; do
  read -r m lo hi < <(stat_of build "$c" 4)
  read -r dm dlo dhi < <(stat_of build "$c" 5)
  read -r sm _ _ < <(stat_of build "$c" 6)
  ph="-"
  case "$c" in packfs*)
    ph=$(for col in 7 8 9 10; do read -r v _ _ < <(stat_of build "$c" "$col"); printf '%.2f / ' "${v:-0}"; done)
    ph=${ph% / }
    read -r db _ _ < <(stat_of build "$c" 11)
    read -r mb _ _ < <(stat_of build "$c" 12)
    [ -n "${db:-}" ] && ph="$ph; $(mib "$db") + $(mib "$mb")" ;;
  esac
  echo "| $(describe "$c") | $(fmt_s "$m" "$lo" "$hi") | $(fmt_s "$dm" "$dlo" "$dhi") | $(printf '%.0f' "$sm") B ($(mib "$sm")) | $ph |"
done
if [ ${#extractors[@]} -gt 0 ]; then
  echo
  echo "extraction into $out_dir ($(df --output=fstype "$(dirname "$out_dir")" 2>/dev/null | tail -1)), $(awk -F'\t' '$1 == "extract" && $3 + 1 > r {r = $3 + 1} END {print r + 0}' "$results") runs, interleaved"
  echo
  echo "| extract | time | time + sync |"
  echo "| --- | --- | --- |"
  for x in "${extractors[@]}"; do
    read -r m lo hi < <(stat_of extract "$x" 4)
    read -r dm dlo dhi < <(stat_of extract "$x" 5)
    echo "| $(describe_x "$x") | $(fmt_s "$m" "$lo" "$hi") | $(fmt_s "$dm" "$dlo" "$dhi") |"
  done
fi

# The targets of issue 4, where this run built what they compare.
med() { read -r v _ _ < <(stat_of "$@"); echo "${v:-}"; }
verdict() { if awk -v a="$1" -v b="$2" 'BEGIN {exit !(a <= b)}'; then echo met; else echo MISSED; fi; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
pack_raw=$(med build packfs 6); erofs_raw=$(med build erofs 6)
pack_zstd=$(med build packfs-zstd 6); sq_zstd=$(med build squashfs-zstd 6)
t_pack=$(med build packfs-zstd 5); t_sq=$(med build squashfs-zstd 5)
echo
echo "targets:"
if [ -n "$pack_raw" ] && [ -n "$erofs_raw" ]; then
  echo "  uncompressed pack <= erofs image: $(mib "$pack_raw") against $(mib "$erofs_raw") ($(ratio "$pack_raw" "$erofs_raw")x): $(verdict "$pack_raw" "$erofs_raw")"
fi
if [ -n "$pack_zstd" ] && [ -n "$sq_zstd" ]; then
  echo "  zstd pack <= squashfs zstd image: $(mib "$pack_zstd") against $(mib "$sq_zstd") ($(ratio "$pack_zstd" "$sq_zstd")x): $(verdict "$pack_zstd" "$sq_zstd")"
  half=$(awk -v b="$t_sq" 'BEGIN {printf "%.4f", b / 2}')
  echo "  zstd build time <= 0.5x mksquashfs zstd (both durable): $(printf '%.2f' "$t_pack") s against $(printf '%.2f' "$t_sq") s ($(ratio "$t_pack" "$t_sq")x): $(verdict "$t_pack" "$half")"
fi
z15=$(med build packfs-zstd15 6)
if [ -n "$z15" ]; then
  echo "  (same level as mksquashfs: zstd:15 pack $(mib "$z15") in $(printf '%.2f' "$(med build packfs-zstd15 5)") s)"
fi
