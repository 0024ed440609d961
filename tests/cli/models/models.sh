#!/bin/sh
# Models kept across runs (docs/models.md), as a user meets them: the second run of an app
# starts from the first one's samples ("models": "stored") and plans instead of probing; each
# --models mode reads and writes what it says; hlb models list/show/clear; a corrupt, stale or
# foreign file is ignored with one warning naming it and replaced; stored samples that
# mispredict the run are forgotten; a model directory that cannot be written only warns.
# usage: models.sh HLB SCRATCH_DIR
set -u
HLB=$1
D=$2
rm -rf "$D" && mkdir -p "$D"
export HLB_MODEL_DIR="$D/models"
unset HLB_MODELS XDG_CACHE_HOME
fail() { echo "FAIL: $*" >&2; exit 1; }
RUN="$HLB run blackscholes --size 400000 --pus cpu --json"
# field FILE EXPR: a Python expression over the JSON d of FILE.
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
samples() { # stored samples of the blackscholes file, 0 when there is none
  python3 - "$HLB_MODEL_DIR" <<'PY'
import glob, json, sys
files = glob.glob(sys.argv[1] + "/*/blackscholes-*.json")
print(sum(len(p["samples"]) for f in files for p in json.load(open(f))["pus"]) if files else 0)
PY
}
run() { # run NAME [ARGS...]: the JSON in $D/NAME.json, stderr in $D/NAME.err; must verify
  name=$1; shift
  $RUN "$@" >"$D/$name.json" 2>"$D/$name.err" || { cat "$D/$name.err" >&2; fail "$name: exit $?"; }
  [ "$(field "$D/$name.json" "d['verified']")" = True ] || fail "$name: not verified"
}

# 1. Nothing stored: the run trains and stores its samples; the second starts from them.
run first
[ "$(field "$D/first.json" "d['models']")" = trained ] || fail "first run: $(cat "$D/first.json")"
n1=$(samples)
[ "$n1" -gt 0 ] || fail "the first run stored no samples"
run second
[ "$(field "$D/second.json" "d['models']")" = stored ] || fail "second run did not start from the stored models"
[ "$(field "$D/second.json" "d['pus'][0]['prior_samples']")" -gt 0 ] || fail "second run: no prior samples"
grep -q "$HLB_MODEL_DIR" "$D/second.json" || fail "the JSON does not name the model file"
n2=$(samples)
# Its samples are added to the stored ones; or, when its blocks contradicted them (a busy
# machine makes a 20 ms run's blocks vary that much), they replace them, and the JSON says so.
if [ "$(field "$D/second.json" "d['pus'][0]['priors_forgotten']")" = True ]; then
  [ "$n2" -ge 1 ] && [ "$n2" -le "$(field "$D/second.json" "d['pus'][0]['blocks']")" ] ||
    fail "the second run forgot the stored samples but did not replace them ($n1 -> $n2)"
else
  [ "$n2" -gt "$n1" ] || fail "the second run added no samples ($n1 -> $n2)"
fi
# The text output says where the models came from.
$HLB run blackscholes --size 400000 --pus cpu | grep -q "models: started from stored samples" ||
  fail "the text output does not say the run started from stored samples"
n2=$(samples)

# 2. The modes: off touches nothing, read does not write, write does not read.
run off --models off
[ "$(field "$D/off.json" "d['models']")" = trained ] || fail "--models off started from stored models"
[ "$(samples)" -eq "$n2" ] || fail "--models off wrote samples"
run read --models read
[ "$(field "$D/read.json" "d['models']")" = stored ] || fail "--models read did not read"
[ "$(samples)" -eq "$n2" ] || fail "--models read wrote samples"
run write --models write
[ "$(field "$D/write.json" "d['models']")" = trained ] || fail "--models write read the stored models"
[ "$(samples)" -gt "$n2" ] || fail "--models write stored nothing"
HLB_MODELS=off run env_off
[ "$(field "$D/env_off.json" "d['models']")" = trained ] || fail "HLB_MODELS=off was not obeyed"
$RUN --models sometimes >/dev/null 2>"$D/bad.err"
[ $? -eq 2 ] || fail "--models sometimes: expected exit 2"
grep -q "sometimes" "$D/bad.err" || fail "--models sometimes: the error does not name the value"

# 3. hlb models list / show / clear.
$HLB models list >"$D/list.out" || fail "hlb models list failed"
grep -q "blackscholes-" "$D/list.out" || fail "hlb models list: $(cat "$D/list.out")"
$HLB models show --codelet blackscholes >"$D/show.out" || fail "hlb models show failed"
grep -q "cpu|" "$D/show.out" && grep -q "F(x) =" "$D/show.out" || fail "hlb models show: $(cat "$D/show.out")"
$HLB models list --json >"$D/list.json" || fail "hlb models list --json failed"
[ "$(field "$D/list.json" "d['files'][0]['codelet']")" = blackscholes ] || fail "list --json: $(cat "$D/list.json")"
$HLB models clear --codelet matmul | grep -q "removed 0 model files" || fail "clear --codelet matmul removed something"
$HLB models clear --codelet blackscholes | grep -q "removed 1 model file" || fail "clear did not remove the file"
[ "$(samples)" -eq 0 ] || fail "samples left after clear"
run after_clear
[ "$(field "$D/after_clear.json" "d['models']")" = trained ] || fail "the run after clear did not train"

# 4. Files that cannot be trusted: one warning naming the file, the run trains and replaces it.
file=$(ls "$HLB_MODEL_DIR"/*/blackscholes-*.json)
host=$(basename "$(dirname "$file")")
for kind in corrupt stale foreign; do
  case $kind in
    corrupt) printf '{"hlb_models": 1, "host": ' >"$file" ;;
    stale) python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['hlb_models']=99; json.dump(d,open(sys.argv[1],'w'))" "$file" ;;
    foreign) python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['host']='0123456789abcdef'; json.dump(d,open(sys.argv[1],'w'))" "$file" ;;
  esac
  run "$kind"
  [ "$(field "$D/$kind.json" "d['models']")" = trained ] || fail "$kind file: the run used it"
  [ "$(grep -c "hlb: models: $file: ignored" "$D/$kind.err")" -eq 1 ] ||
    fail "$kind file: expected one warning naming $file, got: $(cat "$D/$kind.err")"
  grep -q "$kind" "$D/$kind.err" || fail "$kind file: the warning does not say '$kind'"
  run "after_$kind"
  [ "$(field "$D/after_$kind.json" "d['models']")" = stored ] || fail "$kind file was not replaced by a good one"
done
[ "$host" = "$(field "$D/list.json" "d['host']")" ] || fail "the folder is not the host key"

# 5. Stored samples 10x faster than the machine: the run forgets them (after its first blocks,
# or at its end when it had fewer). Two runs that only write make sure there are samples.
run fill1 --models write
run fill2 --models write
python3 - "$file" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["pus"]:
    p["samples"] = [[x, c / 10, t] for x, c, t in p["samples"]]
json.dump(d, open(sys.argv[1], "w"))
PY
run wrong
[ "$(field "$D/wrong.json" "d['pus'][0]['priors_forgotten']")" = True ] ||
  fail "priors 10x off were not forgotten: $(cat "$D/wrong.json")"

# 6. A model directory that cannot be written: the run works and warns.
HLB_MODEL_DIR=/proc/hlb-no-such-dir $RUN >"$D/ro.json" 2>"$D/ro.err" || fail "an unwritable model directory failed the run"
[ "$(field "$D/ro.json" "d['verified']")" = True ] || fail "unwritable model directory: not verified"
field "$D/ro.json" "d['model_error']" | grep -q "/proc/hlb-no-such-dir" || fail "model_error does not name the directory: $(cat "$D/ro.json")"

# 7. Samples another policy stored for other items do not cut this run's blocks: after two
# greedy runs of mandelbrot on PoCL alone (its 13-row blocks of the costly bottom rows kept),
# hlb's probes of the cheap top rows read against them as a curve rising with the block size,
# and the best_block cap cut the whole run into 7-row blocks (114 blocks, 1.9x the time).
if "$HLB" run matmul --size 8 --pus opencl:0 >/dev/null 2>&1; then
  export HLB_MODEL_DIR="$D/other-policy"
  for policy in greedy greedy; do
    "$HLB" run mandelbrot --pus opencl:0 --policy $policy --json >"$D/m.json" || fail "mandelbrot $policy"
  done
  "$HLB" run mandelbrot --pus opencl:0 --json >"$D/m.json" || fail "mandelbrot hlb"
  blocks=$(field "$D/m.json" "d['pus'][0]['blocks']")
  [ "$blocks" -le 8 ] || fail "hlb after greedy's stored blocks ran $blocks blocks: $(cat "$D/m.json")"
fi
echo ok
