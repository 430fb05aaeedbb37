#!/usr/bin/env bash
# Builds an experimental PTX variant of one or more families into DIR, for
# timing with BARACUDA_PTX_DIR=DIR on a GPU host (no Go rebuild needed):
#
#   scripts/ptx-variant.sh DIR ARCH MINBLOCKS FAMILY...
#
# ARCH is nvcc's virtual architecture (compute_70 is what gen commits);
# MINBLOCKS, when not 0, replaces every kernel's __launch_bounds__ with
# (256, MINBLOCKS). Extra nvcc flags can be given in NVCC_EXTRA. The
# committed modules are never touched: a variant that wins goes into the
# spec table and `go run ./gen`.
set -euo pipefail
dir=$1 arch=$2 minblocks=$3
shift 3
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for fam in "$@"; do
	src="$root/gen/z$fam.cu"
	if [ "$minblocks" != 0 ]; then
		sed -E "s/__launch_bounds__\(256(, [0-9]+)?\)/__launch_bounds__(256, $minblocks)/" "$src" >"$tmp/z$fam.cu"
	else
		cp "$src" "$tmp/z$fam.cu"
	fi
	nvcc -ptx -arch="$arch" -O3 -std=c++14 -Xcompiler -fno-strict-aliasing ${NVCC_EXTRA:-} \
		-I "$root/gen" -o "$dir/$fam.ptx" "$tmp/z$fam.cu" &
done
wait
for fam in "$@"; do
	printf '%s %s minblocks=%s: ' "$dir/$fam.ptx" "$arch" "$minblocks"
	ptxas -arch=sm_90 -v -o /dev/null "$dir/$fam.ptx" 2>&1 |
		awk '/spill/{if ($5+$9 > 0) s++} /Used/{n++; if (!lo || $5 < lo) lo=$5; if ($5 > hi) hi=$5} END{printf "%d kernels, registers %d..%d, %d spilling\n", n, lo, hi, s}'
done
