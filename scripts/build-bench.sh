#!/usr/bin/env bash
# Cross-compiles the baracuda CLI for a GPU host and puts the PyTorch
# reference and comparison scripts beside it.
set -euo pipefail
out=${1:-build/bench}
mkdir -p "$out"
CGO_ENABLED=0 GOOS=linux GOARCH=${GOARCH:-amd64} go build -o "$out/baracuda" ./cmd/baracuda
cp bench/torch_ref.py bench/torch_nccl.py bench/compare.py bench/ab.py bench/run.sh "$out/"
echo "copy $out to a GPU host and run: $out/run.sh [filter]"
