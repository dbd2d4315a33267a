# What the fuse_*_test.sh scripts share: skipping where FUSE cannot mount, mounting with a
# record of what was mounted, and a cleanup (trap EXIT) that leaves no mount and no daemon
# behind. Sourced after common.sh, with $packfs and $work set (absolute paths, no spaces).
#
#   fuse_setup          traps EXIT/INT/TERM/HUP; exits 0 with "SKIP: ..." when FUSE is
#                       unavailable or mounting is not permitted
#   do_mount SRC MNT [ARGS...]   packfs mount, MNT recorded for the cleanup (made if missing)
#   do_umount MNT       packfs umount (bounded in time)
#   is_mounted MNT      MNT is in the mount table (also when its daemon is dead)
#   daemon_pid MNT      the pid(s) of the packfs process serving MNT
#   track_pid PID       a background process the cleanup kills if still running
#   wait_for COND...    retries COND (a command) for up to 20 s

# Mounts are found in the mount table, not remembered: do_mount often runs in a subshell
# (expect_code). Everything this script mounts lies under $work.
fuse_pids_file() { echo "$work/.fuse_pids"; }

is_mounted() { awk -v m="$1" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; }

under_work_mounted() {
    awk -v w="$work" 'index($5, w "/") == 1 { f = 1 } END { exit !f }' /proc/self/mountinfo
}

daemon_pid() {  # every packfs process whose argv holds MNT as one argument
    local p name
    name=$(basename "$packfs")
    for p in $(pgrep -x "${name:0:15}" || true); do
        if { tr '\0' '\n' <"/proc/$p/cmdline"; } 2>/dev/null | grep -qxF -- "$1"; then echo "$p"; fi
    done
}

track_pid() { echo "$1" >>"$(fuse_pids_file)"; }

mounts_under_work() {  # deepest first
    awk -v w="$work" 'index($5, w "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

wait_for() {  # wait_for COMMAND...: until it succeeds, 20 s at most
    local i
    for i in $(seq 1 200); do
        if "$@"; then return 0; fi
        sleep 0.1
    done
    return 1
}

do_mount() {
    local src="$1" mnt="$2"
    shift 2
    mkdir -p "$mnt"
    timeout 60 "$packfs" mount "$src" "$mnt" "$@"
}

do_umount() { timeout 60 "$packfs" umount "$1"; }

fuse_cleanup() {
    local status=$? p m tries
    set +e
    if [ -f "$(fuse_pids_file)" ]; then
        for p in $(cat "$(fuse_pids_file)"); do kill -9 "$p" 2>/dev/null; done
    fi
    for tries in 1 2 3 4; do
        for m in $(mounts_under_work); do
            echo "cleanup: unmounting $m"
            case $tries in
                1) timeout 30 "$packfs" umount "$m" || umount "$m" ;;
                2) fusermount3 -u "$m" ;;
                3) fusermount3 -uz "$m" ;;
                *) umount -l "$m" ;;
            esac >/dev/null 2>&1
            # A daemon that outlived its mount (it should not): gone too.
            for p in $(daemon_pid "$m"); do kill -9 "$p" 2>/dev/null; done
        done
    done
    if under_work_mounted; then
        echo "cleanup: mounts remain under $work, not removing it"
        grep -F "$work" /proc/self/mountinfo
        status=1
    else
        rm -rf --one-file-system "$work"
    fi
    exit $status
}

fuse_setup() {
    trap fuse_cleanup EXIT
    trap 'exit 143' TERM
    trap 'exit 130' INT
    trap 'exit 129' HUP
    if [ ! -e /dev/fuse ]; then
        echo "SKIP: /dev/fuse is missing (no FUSE here)"
        exit 0
    fi
    if [ ! -r /dev/fuse ] || [ ! -w /dev/fuse ]; then
        echo "SKIP: /dev/fuse is not readable and writable by $(id -un)"
        exit 0
    fi
    if [ "$(id -u)" -ne 0 ] && ! command -v fusermount3 >/dev/null; then
        echo "SKIP: not root and no fusermount3: mounting is not permitted"
        exit 0
    fi
    # A trial mount: a container may have /dev/fuse and still forbid mount(2).
    mkdir -p "$work/probe/src" "$work/probe/mnt"
    echo probe >"$work/probe/src/file"
    "$packfs" build "$work/probe/src" "$work/probe/p.pack" >/dev/null
    if ! do_mount "$work/probe/p.pack" "$work/probe/mnt" 2>"$work/probe/err"; then
        if grep -qiE 'permi|not permitted|/dev/fuse|fusermount|kernel refused' "$work/probe/err"; then
            echo "SKIP: mounting is not permitted here: $(head -c 300 "$work/probe/err")"
            exit 0
        fi
        echo "FAIL: a trial mount of a one-file pack failed:"
        cat "$work/probe/err"
        exit 1
    fi
    if ! grep -qx probe "$work/probe/mnt/file"; then
        echo "FAIL: the trial mount does not serve its file"
        exit 1
    fi
    do_umount "$work/probe/mnt" || { echo "FAIL: packfs umount of the trial mount"; exit 1; }
}
