// Single-axis reduction backward: given dy and the forward output y (both in
// keepdim form: the input shape with the reduced axis set to 1) and the
// saved input x, write dx = dL/dx in the input shape. Semantics follow
// PyTorch's autograd formulas (docs/semantics.md, section 3). Every functor
// computes in opmath (float for f16/bf16/f32, double for f64); statistics
// accumulate in opmath and each dx is rounded once when stored.
//
// Iteration space. The launcher views the tensors as S slices of length k
// (k = the reduced axis): a slice is addressed by its index s over the
// remaining dims (sdim, merged and ordered by x's strides, outermost first)
// and a position j along the axis (kstride). Each slice is cut into
// nchunks chunks of `chunk` positions; one (slice, chunk) pair is a tile.
// Two mappings of threads to tiles, chosen by the launcher from x's strides:
//
//   row (the axis is x's fastest dim): `group` = G threads (a power of two,
//     1..256) share a tile and step along k, with 16-byte packs where x and
//     dx are contiguous along the axis and equally aligned; 256/G tiles
//     per block, tile t = s*nchunks + chunk.
//   col (an outer axis): a block is W = 256/H threads across slices by H =
//     `group` threads along k (H <= 8); the lanes of a warp take adjacent
//     slices, so they move coalesced across the inner dims, each lane V =
//     cvec adjacent slices (one 8- or 16-byte access) where x and dx are
//     contiguous across them. Tile t = (slice block)*nchunks + chunk.
//
// Ops with per-slice statistics (max/min: the tie count; prod: the zero
// count and the product of the non-zeros; var/std: the sum) reduce them
// once per slice over the threads of the tile (shuffles, then shared
// memory, in a fixed order: deterministic and bit-stable) and apply the
// elementwise formula afterwards, so no work is O(n*k).
//   - nchunks == 1 (the row or col kernel alone, one pass): a row tile
//     whose packs fit in RedCache registers per thread reads x once;
//     otherwise x is streamed for the statistics and again for dx (L1/L2
//     serve the second read of short slices).
//   - nchunks > 1 (few slices, long axis: the stats kernel, then the apply
//     kernel twice): the stats kernel writes each tile's partial statistics
//     to the workspace (row: ws[s*nchunks + c]; col: ws[c*S + s]); the
//     apply kernel's first launch (red_total) combines each slice's partials
//     once into ws[S*nchunks + s], its second applies (for the
//     provisional ops: rewrites the tiles whose provisional dx can be
//     wrong). That one walks the tiles in reverse (L.reverse) so its
//     first reads hit what the stats kernel left in L2. For var/std along
//     an outer axis the launcher may instead take the one kernel (RED_ONE,
//     red_one_totals): a single launch whose tiles keep x in shared memory
//     while their slice block's partials complete. Ops without statistics
//     need no split pass: the row and col kernels take any nchunks.
// max/min and prod are "provisional": whenever x is streamed for the
// statistics, dx is also written assuming the common case (one maximum; no
// zero), which gives bit-identical results when it holds; the pass that
// knows the statistics rewrites only the slices where it does not hold
// (fix()); on split slices the apply kernel's second launch rewrites, over
// the whole grid, only the tiles whose provisional dx can be wrong
// (fix_chunk(): for max/min, those holding an element equal to y). So
// those ops read x once in the common case on every path, and a tie or a
// zero costs no serial work per slice. On dense operands whose slices would be split the launcher
// takes the flat kernel for them instead (reduce_flat, red_flat_fix).
#pragma once
// The family's pieces, each including the one before it, in the order
// nvcc reads them:
#include "reduce_ops.cuh"
#include "reduce_row.cuh"
#include "reduce_col.cuh"
#include "reduce_pass.cuh"
#include "reduce_flat.cuh"
#include "reduce_flat_fix.cuh"
#include "reduce_kernels.cuh"
#include "reduce_seg.cuh"
#include "reduce_segs.cuh"
#include "reduce_short.cuh"
#include "reduce_inner.cuh"
