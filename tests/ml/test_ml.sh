#!/usr/bin/env bash
# ai.onnx.ml and XGBoost-import tests: `infera run` on each case of
# tests/ml/data/manifest.txt (made by gen_ml_models.py) must match the
# expected outputs computed with numpy / scikit-learn / XGBoost
# (<case>.want.*) and ONNX Runtime's (<case>.ort.*, where ORT runs the model),
# at 1 and 2 threads.  Every output the manifest lists needs at least one
# reference: an output with none fails (it would otherwise go unchecked).
# Also: malformed ensembles are rejected at load with an error naming the
# attribute, and the fraud example model runs.
#   test_ml.sh INFERA NPY_COMPARE   (INFERA_TEST_THREADS, default "1 2": the thread counts)
set -u
. "$(dirname "$0")/../check.sh"
infera=$1
compare=$2
here=$(cd "$(dirname "$0")" && pwd)
data=$here/data
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

while read -r name model rest; do
    [ -z "$name" ] && continue
    inputs=${rest%% : *}
    rest=${rest#* : }
    outputs=${rest%% : *}
    tol=${rest##* : }
    for threads in ${INFERA_TEST_THREADS:-1 2}; do
        args=()
        for in in $inputs; do
            f=$(ls "$data/$name.in.$in".* | head -1)
            args+=(--input "$in=$f")
        done
        out=$work/$name-$threads
        if ! "$infera" run "$data/$model" "${args[@]}" --output-dir "$out" --threads "$threads" 2>"$work/err"; then
            bad "$name threads=$threads: infera run failed: $(cat "$work/err")"
            continue
        fi
        for o in $outputs; do
            got=$(ls "$out/$o".* 2>/dev/null | head -1)
            refs=0
            for ref in "$data/$name.want.$o".* "$data/$name.ort.$o".*; do
                [ -e "$ref" ] || continue
                kind=$(basename "$ref" | cut -d. -f2)
                refs=$((refs + 1))
                if [ -z "$got" ]; then
                    bad "$name/$o threads=$threads: no output"
                    continue
                fi
                gotf=$got
                case $ref in *.seq.pb) cp "$got" "$work/got.seq.pb"; gotf=$work/got.seq.pb ;; esac
                if "$compare" "$gotf" "$ref" "$tol" "$tol"; then
                    ok "$name/$o threads=$threads vs $kind"
                else
                    bad "$name/$o threads=$threads vs $kind"
                fi
            done
            # an output listed in the manifest is compared with something, or the case fails
            [ "$refs" -gt 0 ] || bad "$name/$o threads=$threads: no reference ($name.want.$o.* or $name.ort.$o.*)"
        done
    done
done <"$data/manifest.txt"

# malformed ensembles: rejected at load, the error names the attribute
for bad_model in "$data"/bad_*.onnx; do
    [ -e "$bad_model" ] || continue
    expect=$(cat "${bad_model%.onnx}.expect")
    if "$infera" info "$bad_model" >/dev/null 2>"$work/err"; then
        bad "$(basename "$bad_model"): loaded"
    elif grep -q -- "$expect" "$work/err"; then
        ok "$(basename "$bad_model"): $(cat "$work/err")"
    else
        bad "$(basename "$bad_model"): error '$(cat "$work/err")' does not mention '$expect'"
    fi
done

# the fraud example (examples/fraud): both forms give XGBoost's probabilities
fraud=$here/../../examples/fraud
if [ -e "$fraud/fraud_xgb.json" ]; then
    for m in fraud_xgb.json fraud_xgb.onnx; do
        if "$infera" run "$fraud/$m" --input "input=$fraud/sample_features.npy" --output-dir "$work/fraud-$m" 2>"$work/err" &&
            "$compare" "$work/fraud-$m/probabilities.npy" "$fraud/sample_probabilities.npy" 1e-6 1e-6; then
            ok "examples/fraud/$m vs xgboost"
        else
            bad "examples/fraud/$m vs xgboost $(cat "$work/err")"
        fi
    done
fi
check_done
