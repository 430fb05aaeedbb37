package ops

// The short mapping's packed inner form (gen/reduce_inner.cuh,
// reduce_inner): an innermost axis of k positions over many slices, f32
// (k = 1 to 8, 10, 12, 14, 16), f16 and bf16 (k = 1, 2, 3, 4, 6, 8, 12,
// 16): those whose unit fits redInnerUnit. x and dx, seen as [S, k],
// are cut into units of lcm(k, N) elements (N = 16/size, a 16-byte pack):
// u = k/gcd(k, N) packs holding q = N/gcd(k, N) whole slices. A thread
// owns whole units: it loads their packs of x and the q values of dy and y
// of each (one load where they are aligned to it) for b units at a time,
// all before it uses any, reduces each slice in registers and stores its
// dx packs; no shared memory and no barrier, so a block's loads of one
// step overlap its others' arithmetic and stores. The lanes of a warp take
// consecutive units, so each load and store is coalesced across the warp.
// The S mod q slices left over (fewer than a pack's elements) take a
// thread each of the last block. The staged form (red_short_inner: a
// chunk of x through shared memory) keeps the other k and f64.
//
// redInnerPacks, redInnerVals and redInnerUnit (the packs of x a thread
// loads in a step, the most values of dy it loads in a step, the longest
// unit) are generated (ops/zconsts.go).

// innerPacked reports whether the packed inner form takes an axis of k on
// elements of size bytes (the bodies reduce_inner has): f32, f16 and bf16,
// k up to redShortMaxK whose unit, lcm(k, N), is at most redInnerUnit
// elements.
func innerPacked(k int64, size int) bool {
	if size != 2 && size != 4 || k < 1 || k > redShortMaxK {
		return false
	}
	n := int64(16 / size)
	return k/gcd64(k, n)*n <= redInnerUnit
}

// innerUnit is RedInner<T, k>: a unit's packs u and slices q (u*N = q*k =
// lcm(k, N)), and the units b a thread takes in a step (as many as keep
// its packs within redInnerPacks and its values of dy within
// redInnerVals, at least one).
func innerUnit(k int64, size int) (u, q, b int64) {
	n := int64(16 / size)
	g := gcd64(k, n)
	u, q = k/g, n/g
	b = min(redInnerPacks/u, redInnerVals/q)
	if b < 1 {
		b = 1
	}
	return u, q, b
}

func gcd64(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// innerGrid is the packed form's grid: a block per block step (redBlock
// threads of b units each; gridCover's reasoning: the kernel streams like
// the elementwise ones), at least one (the last block takes the slices
// past the last whole unit).
func innerGrid(slices, k int64, size int) int64 {
	_, q, b := innerUnit(k, size)
	return max(min(ceilDiv(slices/q, redBlock*b), maxGridX), 1)
}
