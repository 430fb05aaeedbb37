#!/usr/bin/env bash
# Cross-compiles every GPU test binary (build tag cuda), the baracuda CLI and
# a runner script into one folder, ready to copy to a GPU host. No cgo: the
# binaries are static and need only the NVIDIA driver there.
set -euo pipefail
out=${1:-build/cuda}
arch=${GOARCH:-amd64}
mkdir -p "$out"
export CGO_ENABLED=0 GOOS=linux GOARCH=$arch
pkgs=$(grep -l '^//go:build cuda' $(find . -name '*_test.go' -not -path './build/*') | xargs -n1 dirname | sort -u)
for dir in $pkgs; do
  name=$(echo "${dir#./}" | tr '/' '_')
  go test -c -tags cuda -ldflags="-s -w" -o "$out/$name.test" "./${dir#./}"
  echo "built $out/$name.test"
done
# The concurrency tests once more under the race detector, which needs cgo
# (only where this machine can link for the target).
if [ "$arch" = "$(go env GOHOSTARCH)" ] && command -v gcc >/dev/null 2>&1; then
  CGO_ENABLED=1 go test -race -c -tags cuda -o "$out/conform-race.bin" ./internal/conform
  echo "built $out/conform-race.bin (-race)"
fi
go build -ldflags="-s -w" -o "$out/baracuda" ./cmd/baracuda
echo "built $out/baracuda"
go build -ldflags="-s -w" -o "$out/allreduce" ./examples/allreduce
echo "built $out/allreduce"
cp scripts/cuda-runner.sh "$out/run.sh"
chmod +x "$out/run.sh"
echo "copy $out to a GPU host and run: $out/run.sh"
