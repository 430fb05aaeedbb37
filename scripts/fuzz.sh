#!/usr/bin/env bash
# Runs every Fuzz target of every package for a bounded time each
# (default 20s; pass a Go duration). The seed corpora in testdata/fuzz run
# as plain tests in `go test ./...` too.
set -euo pipefail
t=${1:-20s}
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "fuzz $pkg $target for $t"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$t" "$pkg"
  done
done
