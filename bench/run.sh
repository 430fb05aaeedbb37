#!/usr/bin/env bash
# On a GPU host: runs baracuda's benchmark and PyTorch's on the same GPU and
# prints one comparison table. Run from the folder made by `task bench:build`.
#   ./run.sh [filter]           the bench cases (results also land in ours.jsonl and torch.jsonl)
#   ./run.sh --sweep [filter]   the size sweep (sweep-ours.jsonl and sweep-torch.jsonl)
#   ./run.sh --shapes [filter]  the shape-and-data set (shapes-ours.jsonl and shapes-torch.jsonl)
#   ./run.sh --nccl [filter]    NCCL all-reduce bus bandwidth on every visible GPU: ours in one
#                               process (nccl-ours.jsonl) and one process per GPU
#                               (nccl-ours-procs.jsonl), torch.distributed's (nccl-torch.jsonl)
#   ./run.sh --ab filter VARIANT...
#                               an A/B of kernel variants (no PyTorch): the cases matching filter
#                               ("" for all; bench -filter, so a|b takes both) with the embedded
#                               kernels and with each VARIANT, a space-separated list of: a
#                               directory of PTX modules (BARACUDA_PTX_DIR, e.g. from
#                               scripts/ptx-variant.sh), NAME=VALUE settings of developer knobs,
#                               and the path of another build's baracuda (a change to Go code as
#                               well as kernels); AB_ROUNDS rounds (2 by default), alternating,
#                               then ab.py's table (runs in ab-<n>-<round>.jsonl, n = 0 for the
#                               baseline)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT_DIR:-$here}
mode=""
case "${1:-}" in
--sweep | --shapes | --nccl | --ab) mode=$1; shift ;;
esac
if [ "$mode" = --ab ]; then
  if [ $# -lt 2 ]; then
    echo "usage: run.sh --ab filter VARIANT..." >&2
    exit 2
  fi
  filter=$1
  shift
  variants=("" "$@")
  rm -f "$out"/ab-*-*.jsonl
  for round in $(seq 1 "${AB_ROUNDS:-2}"); do
    for i in "${!variants[@]}"; do
      env=()
      bin=$here/baracuda
      for tok in ${variants[$i]}; do
        case "$tok" in
        *=*) env+=("$tok") ;;
        *)
          if [ -d "$tok" ]; then
            env+=("BARACUDA_PTX_DIR=$(cd "$tok" && pwd)")
          elif [ -x "$tok" ]; then
            bin=$tok
          else
            echo "run.sh --ab: $tok is no directory of PTX, NAME=VALUE or executable baracuda" >&2
            exit 2
          fi
          ;;
        esac
      done
      env ${env[@]+"${env[@]}"} "$bin" bench -json -filter "$filter" > "$out/ab-$i-$round.jsonl"
    done
  done
  sides=()
  for i in "${!variants[@]}"; do
    files=$(ls "$out"/ab-"$i"-*.jsonl | paste -sd, -)
    sides+=("$files")
    echo "side $i: ${variants[$i]:-embedded kernels} ($files)"
  done
  python3 "$here/ab.py" "${sides[@]}"
  exit 0
fi
prefix=${mode:+${mode#--}-}
filter=${1:-}
if [ "$mode" = --nccl ]; then
  export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
  # Ours loads the very libnccl.so.2 of PyTorch's wheel, where there is one.
  if [ -z "${BARACUDA_NCCL_LIBRARY:-}" ]; then
    lib=$(python3 -c 'import glob, site
dirs = site.getsitepackages() + [site.getusersitepackages()]
print("\n".join(p for d in dirs for p in glob.glob(d + "/nvidia/nccl/lib/libnccl.so.2")))' 2>/dev/null | head -n 1 || true)
    if [ -n "$lib" ]; then
      export BARACUDA_NCCL_LIBRARY=$lib
    fi
  fi
  gpus=$("$here/baracuda" info 2>/dev/null | grep -c '^GPU ' || true)
  "$here/baracuda" bench -nccl -json -filter "$filter" > "$out/nccl-ours.jsonl"
  python3 "$here/torch_nccl.py" "$filter" > "$out/nccl-torch.jsonl"
  echo "== ours, one process driving every GPU"
  python3 "$here/compare.py" "$out/nccl-ours.jsonl" "$out/nccl-torch.jsonl"
  if [ "${gpus:-0}" -ge 2 ]; then
    "$here/baracuda" bench -nccl -nccl-procs "$gpus" -json -filter "$filter" > "$out/nccl-ours-procs.jsonl"
    echo
    echo "== ours, one process per GPU"
    python3 "$here/compare.py" "$out/nccl-ours-procs.jsonl" "$out/nccl-torch.jsonl"
  fi
  exit 0
fi
"$here/baracuda" bench $mode -json -filter "$filter" > "$out/${prefix}ours.jsonl"
python3 "$here/torch_ref.py" $mode "$filter" > "$out/${prefix}torch.jsonl"
python3 "$here/compare.py" "$out/${prefix}ours.jsonl" "$out/${prefix}torch.jsonl"
