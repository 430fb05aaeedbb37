#!/usr/bin/env bash
# On a GPU host: runs baracuda's benchmark and PyTorch's on the same GPU and
# prints one comparison table. Run from the folder made by `task bench:build`.
#   ./run.sh [filter]           the bench cases (results also land in ours.jsonl and torch.jsonl)
#   ./run.sh --sweep [filter]   the size sweep (sweep-ours.jsonl and sweep-torch.jsonl)
#   ./run.sh --shapes [filter]  the shape-and-data set (shapes-ours.jsonl and shapes-torch.jsonl)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT_DIR:-$here}
mode=""
case "${1:-}" in
--sweep | --shapes) mode=$1; shift ;;
esac
prefix=${mode:+${mode#--}-}
filter=${1:-}
"$here/baracuda" bench $mode -json -filter "$filter" > "$out/${prefix}ours.jsonl"
python3 "$here/torch_ref.py" $mode "$filter" > "$out/${prefix}torch.jsonl"
python3 "$here/compare.py" "$out/${prefix}ours.jsonl" "$out/${prefix}torch.jsonl"
