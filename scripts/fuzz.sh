#!/usr/bin/env bash
# Runs every Fuzz target of every package for a bounded time each
# (default 20s; pass a Go duration). The seed corpora in testdata/fuzz run
# as plain tests in `go test ./...` too.
#
# On a loaded machine the fuzzing engine itself sometimes ends a run with
# "context deadline exceeded" when its time is up while a worker is still
# busy; that is no finding (no input is written to testdata/fuzz), so such
# a run is retried once. A real failure writes its input and fails.
set -euo pipefail
t=${1:-20s}
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    for try in 1 2; do
      echo "fuzz $pkg $target for $t"
      log=$(mktemp)
      if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$t" "$pkg" 2>&1 | tee "$log"; then
        rm -f "$log"
        break
      fi
      dir=$(go list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$target
      if [ "$try" = 1 ] && grep -q 'context deadline exceeded' "$log" &&
        [ -z "$(git status --porcelain -- "$dir" 2>/dev/null)" ]; then
        echo "fuzz $target: the engine timed out without a finding; retrying once"
        rm -f "$log"
        continue
      fi
      rm -f "$log"
      exit 1
    done
  done
done
