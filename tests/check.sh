# check.sh -- what every shell test counts and prints, as tests/check.h is
# for the C tests.  Source it near the top of a test (after `set -u`):
#   . "$(dirname "$0")/../check.sh"
# then:
#   ok NAME / bad NAME [DETAIL]     count one "PASS NAME" / "FAIL NAME: DETAIL" line
#   check NAME 'TEST' [DETAIL]      TEST is shell text, evaluated where check is called
#                                   (it sees the test's variables); passes when it succeeds
#   check_run NAME CMD...           runs CMD; passes when it exits 0
#   check_quiet NAME CMD...         the same with CMD's output kept in $CHECK_DIR/quiet.out and
#                                   printed (indented) only when it fails
#   expect_error NAME PATTERN CMD...  CMD exits 1..125 (not a signal) and its stderr matches
#                                   PATTERN (ERE); with CHECK_ONE_LINE=1 stderr is exactly one line
#   expect_output NAME PATTERN CMD... CMD exits 0 and its stdout matches PATTERN (ERE)
#                                   (both keep CMD's stdout/stderr in $CHECK_DIR/out and err:
#                                   set CHECK_DIR to the test's scratch folder first)
#   check_lines CMD...              runs CMD, a child that prints its own checks (a Python or node
#                                   part of the test): each stdout line "ok NAME" or "PASS NAME"
#                                   counts a pass, "FAIL NAME" a failure, other lines are printed
#                                   as they come; a non-zero exit with no FAIL line is a failure
#   wait_child PID [SECONDS]        waits (default 120 s) for background child PID and returns its
#                                   exit status; a child still running then is a hang: its state and
#                                   kernel stack are printed, it is killed (-9) and 124 returned
#   stop_child PID [SIGNAL] [SECONDS]  sends SIGNAL (default TERM), then wait_child
#   have_ort ROOT WITHOUT           sets have_ort=1 when node and tests/models/ort's onnxruntime-node
#                                   are installed under ROOT, else have_ort=0, a note that the test
#                                   runs WITHOUT ONNX Runtime ("PyTorch only", ...) and one skipped part
#   skip REASON                     prints "SKIP: REASON" and exits 77 (ctest: skipped)
#   check_done                      prints "N passed, M failed" and exits: 1 when a check
#                                   failed, else 77 when a part was skipped (SKIPPED_PARTS,
#                                   counted by services.sh's skip_or_fail), else 0
# CHECK_PREFIX (optional) is put before every name, e.g. "[sqlite] ".
PASS=0
FAIL=0

wait_child() {
    local pid_=$1 secs_=${2:-120} i_
    for ((i_ = 0; i_ < secs_ * 10; i_++)); do
        [ -r "/proc/$pid_/status" ] && ! grep -qs '^State:[[:space:]]*Z' "/proc/$pid_/status" || break
        sleep 0.1
    done
    if [ -r "/proc/$pid_/status" ] && ! grep -qs '^State:[[:space:]]*Z' "/proc/$pid_/status"; then
        echo "HANG: pid $pid_ ($(tr '\0' ' ' <"/proc/$pid_/cmdline" | head -c 300)) still running after $secs_ s:"
        grep -E '^(State|Threads)' "/proc/$pid_/status" | sed 's/^/    /'
        for t_ in /proc/"$pid_"/task/*; do echo "    thread ${t_##*/}: $(cat "$t_/wchan" 2>/dev/null) $(head -3 "$t_/stack" 2>/dev/null | tr '\n' ' ')"; done
        if command -v gdb >/dev/null; then
            timeout 30 gdb -p "$pid_" -batch -ex "thread apply all bt 12" 2>/dev/null | grep -E '^(Thread|#)' | head -60 | sed 's/^/    /'
        fi
        kill -9 "$pid_" 2>/dev/null
        wait "$pid_" 2>/dev/null
        return 124
    fi
    wait "$pid_"
}
stop_child() {
    kill -"${2:-TERM}" "$1" 2>/dev/null
    wait_child "$1" "${3:-120}"
}

ok() { PASS=$((PASS + 1)); echo "PASS ${CHECK_PREFIX:-}$1"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL ${CHECK_PREFIX:-}$1${2:+: $2}"; }
check() { if eval "$2"; then ok "$1"; else bad "$1" "${3:-}"; fi; }
check_run() {
    local check_name_=$1
    shift
    if "$@"; then ok "$check_name_"; else bad "$check_name_"; fi
}
check_quiet() {
    local check_name_=$1
    shift
    if "$@" >"${CHECK_DIR:?set CHECK_DIR before check_quiet}/quiet.out" 2>&1; then
        ok "$check_name_"
    else
        bad "$check_name_"
        sed "s/^/    /" "$CHECK_DIR/quiet.out"
    fi
}

expect_error() {
    local name_=$1 pattern_=$2 rc_ lines_
    shift 2
    "$@" >"${CHECK_DIR:?set CHECK_DIR before expect_error}/out" 2>"$CHECK_DIR/err"
    rc_=$?
    lines_=$(wc -l <"$CHECK_DIR/err")
    if [ "$rc_" -ge 1 ] && [ "$rc_" -le 125 ] && grep -qE -- "$pattern_" "$CHECK_DIR/err" &&
        { [ "${CHECK_ONE_LINE:-0}" != 1 ] || [ "$lines_" -eq 1 ]; }; then
        ok "$name_"
    else
        bad "$name_" "exit $rc_, $lines_ stderr lines: $(head -c 300 "$CHECK_DIR/err")"
    fi
}

expect_output() {
    local name_=$1 pattern_=$2 rc_
    shift 2
    "$@" >"${CHECK_DIR:?set CHECK_DIR before expect_output}/out" 2>"$CHECK_DIR/err"
    rc_=$?
    if [ "$rc_" -eq 0 ] && grep -qE -- "$pattern_" "$CHECK_DIR/out"; then
        ok "$name_"
    else
        bad "$name_" "exit $rc_, out: $(head -c 300 "$CHECK_DIR/out"), err: $(head -c 300 "$CHECK_DIR/err")"
    fi
}

check_lines() {
    local line_ name_ rc_=0 fails_=$FAIL
    while IFS= read -r line_; do
        case $line_ in
        "ok "* | "PASS "*)
            name_=${line_#* }
            ok "${name_#"${name_%%[! ]*}"}"
            ;;
        "FAIL "*)
            name_=${line_#FAIL }
            bad "${name_#"${name_%%[! ]*}"}"
            ;;
        *) echo "$line_" ;;
        esac
    done < <("$@")
    wait $! || rc_=$?
    if [ "$rc_" -ne 0 ] && [ "$FAIL" -eq "$fails_" ]; then bad "$1" "exit $rc_"; fi
    return 0
}

have_ort() {
    have_ort=1
    if ! command -v node >/dev/null || [ ! -d "$1/tests/models/ort/node_modules/onnxruntime-node" ]; then
        have_ort=0
        echo "note: onnxruntime-node not installed (cd tests/models/ort && npm ci --ignore-scripts): $2"
        SKIPPED_PARTS=$((${SKIPPED_PARTS:-0} + 1))
    fi
}
skip() {
    echo "SKIP: $*"
    exit 77
}

check_done() {
    echo "$PASS passed, $FAIL failed"
    [ "$FAIL" -eq 0 ] || exit 1
    [ "${SKIPPED_PARTS:-0}" -eq 0 ] || exit 77
    exit 0
}
