#!/usr/bin/env bash
# On a GPU host: runs baracuda's benchmark and PyTorch's on the same GPU and
# prints one comparison table. Run from the folder made by `task bench:build`.
#   ./run.sh [filter]     (results also land in ours.jsonl and torch.jsonl)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
filter=${1:-}
out=${OUT_DIR:-$here}
"$here/baracuda" bench --json --filter "$filter" > "$out/ours.jsonl"
python3 "$here/torch_ref.py" "$filter" > "$out/torch.jsonl"
python3 "$here/compare.py" "$out/ours.jsonl" "$out/torch.jsonl"
