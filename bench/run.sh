#!/usr/bin/env bash
# On a GPU host: runs baracuda's benchmark and PyTorch's on the same GPU and
# prints one comparison table. Run from the folder made by `task bench:build`.
#   ./run.sh [filter]           the bench cases (results also land in ours.jsonl and torch.jsonl)
#   ./run.sh --sweep [filter]   the size sweep (sweep-ours.jsonl and sweep-torch.jsonl)
#   ./run.sh --shapes [filter]  the shape-and-data set (shapes-ours.jsonl and shapes-torch.jsonl)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT_DIR:-$here}
if [ "${1:-}" = "--sweep" ]; then
  filter=${2:-}
  "$here/baracuda" bench -sweep -json -filter "$filter" > "$out/sweep-ours.jsonl"
  python3 "$here/torch_ref.py" --sweep "$filter" > "$out/sweep-torch.jsonl"
  python3 "$here/compare.py" "$out/sweep-ours.jsonl" "$out/sweep-torch.jsonl"
  exit 0
fi
if [ "${1:-}" = "--shapes" ]; then
  filter=${2:-}
  "$here/baracuda" bench -shapes -json -filter "$filter" > "$out/shapes-ours.jsonl"
  python3 "$here/torch_ref.py" --shapes "$filter" > "$out/shapes-torch.jsonl"
  python3 "$here/compare.py" "$out/shapes-ours.jsonl" "$out/shapes-torch.jsonl"
  exit 0
fi
filter=${1:-}
"$here/baracuda" bench --json --filter "$filter" > "$out/ours.jsonl"
python3 "$here/torch_ref.py" "$filter" > "$out/torch.jsonl"
python3 "$here/compare.py" "$out/ours.jsonl" "$out/torch.jsonl"
