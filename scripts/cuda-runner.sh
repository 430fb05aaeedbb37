#!/usr/bin/env bash
# Runs the GPU test binaries that sit beside this script.
#   run.sh                 every test binary, then `baracuda selftest`
#   run.sh sanitize [tool] the test binaries under compute-sanitizer (memcheck,
#                          racecheck, initcheck, synccheck; all four by default),
#                          with the quick case set (BARACUDA_QUICK=1)
#   run.sh par [tool]      the kernel conformance tests (all but the huge ones), each test
#                          in a process of its own, JOBS (8) at a time; with a tool
#                          (memcheck, racecheck, ...), under compute-sanitizer with the
#                          quick case set. Logs in LOG_DIR (./logs), a line per test;
#                          PAR_RUN (a regexp, every test by default) picks the tests.
#   run.sh race            the concurrency, GC-stress and leak tests built with -race
#   run.sh huge            the tests of tensors of more than 2^31 elements (about 22 GB
#                          of GPU memory), each in a process of its own
#   run.sh bench [flags]   `baracuda bench` with the given flags
#   run.sh stalls FILTER KERNEL [N]
#                          Nsight Compute (ncu) on the first N (1) launches of kernels whose
#                          names match the regexp KERNEL in `baracuda bench -filter FILTER`:
#                          each one's time, DRAM and issue figures, then where its warps
#                          wait (the stall reasons per issued instruction, largest first)
#   run.sh nccl [huge]     the NCCL tests (two GPUs: one process with both, and two
#                          processes), then examples/allreduce in f32 and bf16; with
#                          "huge", also the all-reduce of more than 2^31 bytes (2 GiB per GPU)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-test}
status=0
# NVLink multicast can take a shared host's GPUs out of service when a
# program using it dies: keep it off unless told otherwise.
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
# NCCL from PyTorch's wheel (nvidia/nccl/lib) where the loader's own search
# does not reach it: ask the host's python for its site-packages.
if [ -z "${BARACUDA_NCCL_LIBRARY:-}" ] && command -v python3 >/dev/null 2>&1; then
  lib=$(python3 -c 'import glob, site
dirs = site.getsitepackages() + [site.getusersitepackages()]
print("\n".join(p for d in dirs for p in glob.glob(d + "/nvidia/nccl/lib/libnccl.so.2")))' 2>/dev/null | head -n 1)
  if [ -n "$lib" ]; then
    export BARACUDA_NCCL_LIBRARY=$lib
  fi
fi
# one_test BIN TOOL LOGS NAME runs test NAME of BIN alone (under
# compute-sanitizer --tool TOOL unless TOOL is empty), its output in
# LOGS/NAME.txt, and prints one line: the outcome, the test's time or the
# sanitizer's error count, and the name.
one_test() {
  local bin=$1 tool=$2 name=$4 log=$3/$4.txt rc
  if [ -n "$tool" ]; then
    BARACUDA_QUICK=1 compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 \
      "$bin" -test.count=1 -test.timeout="${TEST_TIMEOUT:-30m}" -test.v -test.run "^$name\$" >"$log" 2>&1
  else
    "$bin" -test.count=1 -test.timeout="${TEST_TIMEOUT:-30m}" -test.v -test.run "^$name\$" >"$log" 2>&1
  fi
  rc=$?
  if grep -q -- "^--- SKIP: $name " "$log"; then
    # A skipped test makes no CUDA call, which compute-sanitizer reports as an error.
    echo "skip  $name"
    return 0
  fi
  local what
  what=$(grep -o -- "^--- [A-Z]*: $name ([0-9.]*s)" "$log" | sed 's/.*(\(.*\))/\1/')
  if [ -n "$tool" ]; then
    what=$(grep -o 'ERROR SUMMARY: [0-9]* error[s]*\|RACECHECK SUMMARY: [0-9]* hazard[s]* displayed ([0-9]* error[s]*, [0-9]* warning[s]*)' "$log" | tail -n 1)
  fi
  if [ "$rc" = 0 ]; then
    echo "pass  ${what:-?}  $name"
  else
    echo "FAIL  rc=$rc ${what:-}  $name (log: $log)"
  fi
  # 1, not the test's status: xargs stops at a command's 255.
  [ "$rc" = 0 ] || return 1
}
export -f one_test

case "$mode" in
par)
  tool=${2:-}
  t="$here/internal_conform.test"
  logs=${LOG_DIR:-$here/logs}/$(basename "$t" .test)${tool:+-$tool}
  mkdir -p "$logs"
  echo "=== $(basename "$t"), one process a test, ${JOBS:-8} at a time${tool:+, compute-sanitizer --tool $tool}"
  "$t" -test.list "${PAR_RUN:-.*}" | grep '^Test' | grep -v '^TestHuge' |
    xargs -P "${JOBS:-8}" -I{} bash -c 'one_test "$@"' _ "$t" "$tool" "$logs" {} | tee "$logs/summary.txt" || status=1
  echo "=== $(grep -c '^pass' "$logs/summary.txt") passed, $(grep -c '^skip' "$logs/summary.txt") skipped, $(grep -c '^FAIL' "$logs/summary.txt") failed (logs: $logs)"
  ;;
test)
  for t in "$here"/*.test; do
    echo "=== $(basename "$t")"
    "$t" -test.v -test.count=1 -test.timeout=20m || status=1
  done
  echo "=== baracuda selftest"
  "$here/baracuda" selftest || status=1
  ;;
sanitize)
  tools=${2:-"memcheck racecheck initcheck synccheck"}
  for tool in $tools; do
    # The kernel conformance tests only: the driver and ops tests provoke
    # API errors on purpose, which the sanitizer would count.
    t="$here/internal_conform.test"
    echo "=== compute-sanitizer --tool $tool $(basename "$t")"
    BARACUDA_QUICK=1 compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 \
      "$t" -test.v -test.count=1 -test.timeout=30m -test.run "${SANITIZE_RUN:-GPU}" || status=1
  done
  ;;
race)
  "$here/conform-race.bin" -test.v -test.count=1 -test.timeout=20m \
    -test.run 'TestConcurrentMixedPlans|TestNoLeaks' || status=1
  ;;
huge)
  # A fault leaves its process's context unusable: one process per test.
  for t in TestHugeBinaryMulGPU TestHugeScanCumsumGPU TestHugeReduceGPU TestHugeLpPool1dGPU; do
    echo "=== $t"
    BARACUDA_HUGE=1 "$here/internal_conform.test" -test.v -test.count=1 -test.timeout=30m -test.run "^$t\$" || status=1
  done
  ;;
nccl)
  if [ "${2:-}" = huge ]; then
    export BARACUDA_HUGE=1
  fi
  echo "=== nccl.test (NCCL library: ${BARACUDA_NCCL_LIBRARY:-the search of nccl.SearchPaths})"
  "$here/nccl.test" -test.v -test.count=1 -test.timeout=30m || status=1
  for dt in f32 bf16; do
    echo "=== allreduce example ($dt)"
    "$here/allreduce" -dtype "$dt" || status=1
  done
  ;;
bench)
  shift
  "$here/baracuda" bench "$@" || status=1
  ;;
stalls)
  if [ $# -lt 3 ] || [ $# -gt 4 ]; then
    echo "usage: run.sh stalls FILTER KERNEL [N]" >&2
    exit 2
  fi
  csv=$(mktemp)
  ncu --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats \
    --section WarpStateStats --page raw --csv -k "regex:$3" -c "${4:-1}" \
    "$here/baracuda" bench -iters 1 -filter "$2" >"$csv" || status=1
  python3 - "$csv" <<'PY' || status=1
import csv, re, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if len(rows) < 3:
    sys.exit("ncu gave no kernel row (does KERNEL match a launch of the filtered cases?)")
head, units = rows[0], rows[1]
for val in rows[2:]:
  m = {h: (v, u) for h, u, v in zip(head, units, val)}
  print(m.get("Kernel Name", ("?", ""))[0])
  for k in ("gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
          "sm__warps_active.avg.pct_of_peak_sustained_active", "smsp__issue_active.avg.pct_of_peak_sustained_active",
          "launch__registers_per_thread", "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem"):
    if k in m:
      print(f"  {k:60s} {m[k][0]} {m[k][1]}")
  st = []
  for k, (v, u) in m.items():
    g = re.fullmatch(r"smsp__average_warps?_(?:latency_)?issue_stalled_(\w+)_per_issue_active\.ratio", k)
    if g:
      try:
        st.append((float(v.replace(",", "")), g.group(1)))
      except ValueError:
        pass
  print("  stalls, cycles per issued instruction:")
  for v, name in sorted(st, reverse=True):
    if v >= 0.01:
      print(f"    {name:28s} {v:7.2f}")
PY
  rm -f "$csv"
  ;;
*)
  echo "usage: run.sh [test|sanitize [tool]|par [tool]|race|huge|nccl [huge]|bench [flags]|stalls FILTER KERNEL [N]]" >&2
  exit 2
  ;;
esac
exit $status
