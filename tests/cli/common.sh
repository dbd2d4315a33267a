# The checks the CLI test scripts share; sourced after $work is set. Each failed check counts
# in $failures, which the script turns into its exit status at the end.
failures=0
# Builds keep a files cache and remote packs a block cache: a test's own, never the user's.
export XDG_CACHE_HOME="$work/xdg-cache"
check() {  # check "what" command...: the command must succeed
    local what="$1"
    shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failures=$((failures + 1)); fi
}
# The exit code of a command, without tripping set -e.
code_of() { set +e; "$@" >"$work/last.out" 2>"$work/last.err"; echo $?; set -e; }
expect_code() {  # expect_code "what" CODE command...
    local what="$1" want="$2"
    shift 2
    local got
    got=$(code_of "$@")
    if [ "$got" -eq "$want" ]; then
        echo "ok: $what (exit $got)"
    else
        echo "FAIL: $what: exit $got, expected $want"
        cat "$work/last.out" "$work/last.err"
        failures=$((failures + 1))
    fi
}
