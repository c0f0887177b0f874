# lib.sh -- shell helpers shared by the engine benchmarks bench/run.sh,
# bench/extra/run.sh and bench/trees/run.sh (sourced, POSIX sh): their common
# flags, the output folder, the "infera:" line of machine.txt and the
# rounds x models x threads x configurations loop with alternating order.
#
# The caller sets HERE (its folder) and ROOT (the source tree), sources this
# file (which sets the common defaults below), sets MODELS and calls
# bench_start "FLAGS IT ACCEPTS" "$@".
# shellcheck disable=SC2034  # the variables set here are the callers'

INFERA=$ROOT/build/infera
ROUNDS=3
THREADS="1 2"
QUICK=0
OUT=$HERE/results/$(date +%Y%m%d-%H%M%S)

# Prints the caller's header comment (its usage) without the '#'.
bench_usage() {
    sed -n '2,/^[^#]/p' "$0" | sed '/^[^#]/d; s/^# \{0,1\}//'
}

# Parses the flags named in BENCH_FLAGS (of: infera rounds models threads out
# quick) into INFERA ROUNDS MODELS THREADS OUT QUICK; --help prints the usage.
# Anything else is an error (exit 2).
bench_parse_args() {
    while [ $# -gt 0 ]; do
        [ "$1" = --help ] && { bench_usage; exit 0; }
        case " $BENCH_FLAGS " in
        *" ${1#--} "*) ;;
        *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
        esac
        if [ "$1" = --quick ]; then
            QUICK=1
            ROUNDS=1
            shift
            continue
        fi
        [ $# -ge 2 ] || { echo "run.sh: $1 needs a value" >&2; exit 2; }
        case $1 in
        --infera) INFERA=$2 ;;
        --rounds) ROUNDS=$2 ;;
        --models) MODELS=$2 ;;
        --threads) THREADS=$2 ;;
        --out) OUT=$2 ;;
        esac
        shift 2
    done
}

# bench_start FLAGS ARGS...: parses ARGS (BENCH_FLAGS=FLAGS), checks the
# infera binary, creates OUT and an empty OUT/raw.jsonl (RAW).
bench_start() {
    BENCH_FLAGS=$1
    shift
    bench_parse_args "$@"
    [ -x "$INFERA" ] || { echo "run.sh: no infera binary at $INFERA (build first or pass --infera)" >&2; exit 2; }
    mkdir -p "$OUT"
    RAW=$OUT/raw.jsonl
    : >"$RAW"
}

# Runs the generator $HERE/$1 when a model of MODELS is missing from $HERE/models.
bench_gen_models() {
    for m in $MODELS; do
        [ -f "$HERE/models/$m.onnx" ] || /usr/bin/python3 "$HERE/$1" >&2
    done
}

bench_cpu_name() { lscpu | sed -n 's/^Model name: *//p'; }

# The machine.txt line naming the binary and the source revision (+dirty).
bench_infera_line() {
    echo "infera:  $INFERA ($(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null)$(cd "$ROOT" && git diff --quiet 2>/dev/null || echo '+dirty'))"
}

# For round in 1..ROUNDS, m in MODELS, t in THREADS and each "b it wu"
# (batch iters warmup) that `configs m` prints: sets round m t b it wu,
# announces it on stderr and calls the caller's bench_one.
bench_loop() {
    round=1
    while [ "$round" -le "$ROUNDS" ]; do
        for m in $MODELS; do
            for t in $THREADS; do
                configs "$m" | tr ' ' '\n' | paste - - - | while read -r b it wu; do
                    echo "round $round: $m threads $t batch $b" >&2
                    bench_one
                done
            done
        done
        round=$((round + 1))
    done
}

# Runs the commands $1 and $2 in that order in odd rounds, reversed in even ones.
bench_alternate() {
    if [ $((round % 2)) = 1 ]; then $1; $2; else $2; $1; fi
}
