#!/usr/bin/env bash
# Set up a bare accelerator machine (JAX, NumPy and SciPy installed; no network) from a
# checkout, then run what is asked of it, writing under $OUT:
#   bash benchmarks/accelerator_machine.sh lane       # the accelerator lane, float64 and float32
#   bash benchmarks/accelerator_machine.sh compile    # compile time per kernel, both precisions
#   bash benchmarks/accelerator_machine.sh bench      # ensembles, stencils, a multi-start fit
#   bash benchmarks/accelerator_machine.sh validate   # simkit validate, resumed over calls (carry .tpu-report)
# (COMPILE_CASES="DOP853 Rodas5P:hires" with compile64: only those kernel cases)
# The workplace's device tool brings back at most 8 files from $OUT, each of at most 16 MiB: a command
# running several parts should pack its files (tar, split) before it ends.
# simkit's pure-Python dependencies that the machine's package index lacks travel as wheels in
# .whl-tpu/ (pip download --no-deps ... diffrax equinox lineax optimistix jaxopt jaxtyping
# wadler_lindig h5netcdf; for the validation's PEtab case also the petab extra and what it needs:
# petab sbmlmath python-libsbml antlr4-python3-runtime colorama jsonschema
# jsonschema-specifications referencing rpds-py attrs pydantic pydantic-core annotated-types
# typing-inspection typing-extensions lxml pint flexcache flexparser platformdirs, `pip wheel
# --no-deps` for those published as source only); the others come from the machine's own index
# (KINDS.md of the workplace's device tool).
set -u
OUT=${OUT:-/tmp/simkit-accelerator}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
[ -f /tmp/site2/.ready ] || {
  PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --no-index --no-deps --no-compile \
    --no-cache-dir --upgrade --target /tmp/site .whl-tpu/*.whl
  PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --only-binary=:all: \
    --index-url file:///opt/pypi/simple --target /tmp/site2 xarray h5py matplotlib tqdm pyyaml
  python3 -c 'import platform, jax; print(platform.libc_ver(), jax.__version__, jax.devices())' &&
  touch /tmp/site2/.ready
} > "$OUT/setup.log" 2>&1  # (a machine still warm from an earlier call has it already)
export PYTHONPATH="${PYTHONPATH:-}:/tmp/site:/tmp/site2:$PWD"
lane() {  # $1: f64 or f32, $2: seconds
  local x64=1; [ "$1" = f32 ] && x64=0
  # each line stamped with the seconds since the start (a run cut short still shows each test's time)
  local t0; t0=$(date +%s)
  # $3: a pytest -k expression selecting some of the lane's tests (LANE_K64, LANE_K32)
  # SIMKIT_FAST_COMPILE empty: XLA's own settings for the accelerator's programs, as a user has them, not
  # the CPU suite's (tests/conftest.py sets LLVM's level 0 and CPU flags in XLA_FLAGS otherwise)
  SIMKIT_FAST_COMPILE= SIMKIT_ENABLE_X64=$x64 timeout "$2" python3 -m pytest -m accelerator -p no:xdist -p no:cacheprovider \
    -v --durations=0 --tb=short ${3:+-k "$3"} -W "ignore:cloud_tpu_init failed:UserWarning" -W "ignore:Transparent hugepages:UserWarning" \
    tests/test_accelerator.py 2>&1 | while IFS= read -r line; do echo "$(( $(date +%s) - t0 )) $line"; done \
    > "$OUT/lane_$1${LANE_TAG:-}.txt"
  echo "exit ${PIPESTATUS[0]}" >> "$OUT/lane_$1${LANE_TAG:-}.txt"
}
compile_times() {  # $1: f64 or f32, $2: seconds, rest: options
  local x64=1; [ "$1" = f32 ] && x64=0
  local name=$1 seconds=$2; shift 2
  SIMKIT_ENABLE_X64=$x64 timeout "$seconds" python3 benchmarks/accelerator.py compile --threads 8 \
    --out "$OUT/compile_$name.json" "$@" > "$OUT/compile_$name.log" 2>&1
  echo "exit $?" >> "$OUT/compile_$name.log"
}
for part in "$@"; do
  case $part in
    lane) lane f64 170; lane f32 100 ;;
    lane64) lane f64 "${LANE64_SECONDS:-250}" "${LANE_K64:-}" ;;
    lane32) lane f32 "${LANE32_SECONDS:-250}" "${LANE_K32:-}" ;;
    compile) compile_times f64 200 --variants; compile_times f32 80 ;;
    compile64) compile_times f64 "${COMPILE_SECONDS:-560}" --threads 1 ${COMPILE_CASES:+--cases $COMPILE_CASES} ;;  # one compile at a time: clean per-kernel times
    bench)
      SIMKIT_ENABLE_X64=0 timeout 90 python3 benchmarks/accelerator.py ensemble --out "$OUT/ensemble_f32.json" > "$OUT/bench.log" 2>&1
      SIMKIT_ENABLE_X64=0 timeout 50 python3 benchmarks/accelerator.py stencil --out "$OUT/stencil_f32.json" >> "$OUT/bench.log" 2>&1
      timeout 50 python3 benchmarks/accelerator.py ensemble --members 100000 --peer-max 0 --out "$OUT/ensemble_f64.json" >> "$OUT/bench.log" 2>&1 ;;
    ensembles)  # the default schedule against diffrax's vmap: float32 10^5 and 10^6, float64 10^5
      SIMKIT_ENABLE_X64=0 timeout "${ENSEMBLE_SECONDS:-150}" python3 benchmarks/accelerator.py ensemble \
        --out "$OUT/ensemble_f32.json" > "$OUT/ensemble.log" 2>&1
      timeout "${ENSEMBLE_SECONDS:-150}" python3 benchmarks/accelerator.py ensemble --members 100000 \
        --out "$OUT/ensemble_f64.json" >> "$OUT/ensemble.log" 2>&1 ;;
    ensemble32)  # refilled lanes against lockstep chunks and diffrax
      SIMKIT_ENABLE_X64=0 timeout "${ENSEMBLE_SECONDS:-240}" python3 benchmarks/accelerator.py ensemble \
        --modes default refilled lockstep --out "$OUT/ensemble_f32.json" > "$OUT/ensemble.log" 2>&1 ;;
    validate)  # simkit validate in float64, resumable: the report folder .tpu-report/ travels back in $OUT as
      # tpu-report.tgz.aa, .ab, ... (15 MiB pieces: the device tool returns files of at most 16 MiB);
      # unpacked here (cat tpu-report.tgz.* | tar xz) and named in the next call's carry, it comes back
      # with its finished parts (VALIDATE_SECONDS per call; VALIDATE_QUICK=1: the --quick report)
      timeout "${VALIDATE_SECONDS:-540}" python3 -c 'import sys; from simkit.cli import main; sys.exit(main(["validate", "--out", ".tpu-report", "--resume"] + sys.argv[1:]))' ${VALIDATE_QUICK:+--quick} \
        > "$OUT/validate.log" 2>&1
      echo "exit $?" >> "$OUT/validate.log"
      tar czf - .tpu-report | split -b 15m - "$OUT/tpu-report.tgz." ;;
    fit) SIMKIT_ENABLE_X64=0 timeout "${FIT_SECONDS:-100}" python3 benchmarks/accelerator.py fit --starts ${FIT_STARTS:-1024} --where ${FIT_WHERE:-default host} \
      --out "$OUT/fit_f32.json" > "$OUT/fit.log" 2>&1 ;;
  esac
done
