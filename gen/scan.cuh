// Single-axis scan backward: given dy and the saved forward tensors, write
// dx = dL/dx for y = cumsum, cumprod, cummax, cummin or logcumsumexp of x
// along one axis (docs/semantics.md, section 4). Arithmetic is in opmath (float
// for f16/bf16/f32, double for f64), every dx is rounded once when stored.
//
// One recurrence serves every op. Number the elements of a slice in the
// order the forward scan visited them (k = 0 first; for a reverse forward
// scan that is the end of the axis). With g = dy, each op gives every
// element two factors a_k and c_k and the term h_k it adds (g_k, or
// cumprod's stand-in, CumprodBw), and
//
//	S_k  = h_k + V_{k+1}            (V past the last element is 0)
//	dx_k = c_k (.) S_k
//	V_k  = a_k (.) S_k
//
// so the gradient flowing in from later elements reaches element k scaled
// by a_k. (.) is the op's product: the strong-zero product a (.) b = (a ==
// 0 || b == 0) ? 0 : a*b, which keeps a cut (a == 0) exact (inf or NaN from
// later elements never leak past it), a cheaper form where a is known to
// be 1 or 0/1, or for logcumsumexp the plain product (LogcumsumexpBw: inf
// and NaN spread as in PyTorch's log-space formula). Per op:
//
//	cumsum        a = 1,                c = 1
//	cumprod       a = x_k,              c = y_{k-1} (1 at k = 0)
//	cummax/min    a = t_k ? 0 : 1,      c = t_k ? 1 : 0
//	logcumsumexp  a = exp(y_{k-1}-y_k), c = exp(x_k - y_k)
//
// where t_k says that k is the index the forward picks at k. The element
// map V -> a (.) (h + V) is affine, V -> u + a (.) V with u = a (.) h, and
// two maps compose associatively:
//
//	(a1, u1) after (a2, u2) = (a1 (.) a2, u1 + a1 (.) u2)
//
// which turns the backward pass into a scan: a thread composes the maps of
// its run of elements, the threads of a tile scan their maps (shuffles and
// shared memory, in a fixed order), and the tiles of one slice chain
// through a look-back in the workspace whose result is the sequential
// chain of tile maps: deterministic and bit-stable. Nothing is O(n^2): a
// thread touches its run a constant number of times, a tile's look-back
// folds only the maps of tiles that are still running.
//
// cummax/cummin and cumprod also need a forward state, an exact associative
// scan in the forward direction: the running extremum of x with its NaN
// rule (t_k = x_k is NaN, or the running value before k is not NaN and
// x_k >= it; <= for cummin), and for cumprod whether a zero of x came
// before k (dx_k is then 0, PyTorch's third region, even where y is NaN)
// and whether an x that is ±inf or NaN came after it (h_k, see CumprodBw;
// this combine is not commutative: states combine in scan order).
//
// logcumsumexp takes the factor of a thread's run and of a tile directly,
// exp of y before it minus y of its last element, rather than as the
// product of its elements' factors (Span): rounding then grows with the
// tiles a gradient crosses, not the elements.
//
// The direction is a run-time flag: a thread loads its run in memory order
// and reverses it in registers when the forward scan ran from the end, so
// every loop below walks scan order.
//
// Mappings (chosen by the launcher from the shape; gen/scan_tall.cuh has
// a third, tall, for an outer axis over a few narrow contiguous slices,
// and gen/scan_tallrow.cuh its form for 4 columns, tallrow):
//   row  the axis is the innermost dim: `split` threads (32..256) share a
//        slice, each owning a run of ScanItems::row consecutive elements
//        (16-byte packs when the operands are contiguous along the axis and
//        aligned); 256/split slices per block.
//   col  otherwise: the 32 lanes of a warp take 32 consecutive slices
//        (coalesced across the inner dims) and `split` warps (1..8) share
//        the axis, each owning `items` (<= ScanItems::col) consecutive
//        elements.
//   short (a short axis over many slices, gen/scan_short.cuh): a thread owns
//        a whole slice, staged through shared memory where the slices are
//        contiguous along the axis.
// A slice longer than one tile (split runs) is cut into `chunks` tiles.
// Blocks take tiles through a ticket counter in carry order (the last tile
// in scan order first) and chain them with the look-back; a tile only waits
// on tiles with lower tickets, which are running or done. With a forward
// state, the row mapping runs two passes first: phase 1 writes each tile's
// forward aggregate, phase 2 turns them into exclusive prefixes per slice.
// The col mapping's cumprod computes the state in the main launch, and
// only for the look-back units whose dx depends on it (scan_fwd_unit).
//
// cummax and cummin in the col mapping take another order (ext),
// which reads x once rather than twice: tiles go in scan order and chain
// the forward state through the look-back, and the carry is left out,
// because it reaches only one element of a tile. With a = 0 at every
// take-over, V after the tile stops at the tile's last take-over k* and
// adds to dx there, and nowhere else. So each tile writes dx with V after
// it taken as 0, and records its map and, where it has a take-over, k*
// with the dx value there; scan_ext_fix then walks each slice's tile maps
// from the end and writes dx at each k* with the carry added: with float
// opmath in blocks of the same launch that come after every tile, with
// double in a second launch (SCAN_EXT_FIX).
#pragma once
// The family's pieces, each including the one before it, in the order
// nvcc reads them:
#include "scan_ops.cuh"
#include "scan_io.cuh"
#include "scan_run.cuh"
#include "scan_lookback.cuh"
#include "scan_fwd.cuh"
#include "scan_row.cuh"
#include "scan_col.cuh"
#include "scan_colpair.cuh"
#include "scan_colstrip.cuh"
#include "scan_short.cuh"
#include "scan_tall.cuh"
#include "scan_tallrow.cuh"
