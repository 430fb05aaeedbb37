package ops

import "testing"

// segBatch is the 16-byte packs a thread takes in one batch of the seg
// kernel's loop (RED_SEG_BATCH in gen/reduce_seg.cuh).
const segBatch = 4

// segBatchWalk models red_seg_each's packed loop (gen/reduce_seg.cuh) for
// a chunk of n packs from pack p0: thread tid takes every redBlock-th pack,
// first to last or with rev last to first, segBatch at a time. It calls
// visit(pack, e) for each pack the thread hands on (e: its first position
// less the chunk's, in elements of np a pack) and load(pack) for each pack
// whose load it issues (unused ones past the chunk's end included).
func segBatchWalk(tid, n, p0, np int64, rev bool, visit func(p, e int64), load func(p int64)) {
	step := int64(redBlock)
	if rev {
		step = -step
	}
	p := p0 + tid
	if rev {
		p = p0 + n - 1 - tid
	}
	for i := tid; i < n; i, p = i+segBatch*redBlock, p+segBatch*step {
		var o [segBatch]int64
		for u := range int64(segBatch) {
			o[u] = o[0]
			if u == 0 || i+u*redBlock < n {
				o[u] = p + u*step
			}
		}
		for u := range segBatch {
			load(o[u])
		}
		for u := range int64(segBatch) {
			if i+u*redBlock < n {
				visit(o[u], (p+u*step-p0)*np)
			}
		}
	}
}

// TestReduceSegBatchWalk: every pack of a chunk is handed on once, by the
// thread and in the order of the unbatched walk, with its position, and
// every load stays inside the chunk.
func TestReduceSegBatchWalk(t *testing.T) {
	for _, n := range []int64{0, 1, 7, 255, 256, 257, 1023, 1024, 1025, 3136, 4095, 4096, 4097, 6273} {
		for _, rev := range []bool{false, true} {
			const p0, np = 37, 8
			seen := make([]int, n)
			for tid := int64(0); tid < redBlock; tid++ {
				// The unbatched walk's order for this thread.
				var want []int64
				for i := tid; i < n; i += redBlock {
					if rev {
						want = append(want, p0+n-1-i)
					} else {
						want = append(want, p0+i)
					}
				}
				k := 0
				segBatchWalk(tid, n, p0, np, rev, func(p, e int64) {
					if k >= len(want) || p != want[k] || e != (p-p0)*np {
						t.Fatalf("n %d rev %v thread %d: pack %d (e %d) at step %d, want %v", n, rev, tid, p, e, k, want)
					}
					k++
					seen[p-p0]++
				}, func(p int64) {
					if p < p0 || p >= p0+n {
						t.Fatalf("n %d rev %v thread %d: loads pack %d outside [%d, %d)", n, rev, tid, p, p0, p0+n)
					}
				})
				if k != len(want) {
					t.Fatalf("n %d rev %v thread %d: %d packs, want %d", n, rev, tid, k, len(want))
				}
			}
			for j, c := range seen {
				if c != 1 {
					t.Fatalf("n %d rev %v: pack %d handed on %d times", n, rev, j, c)
				}
			}
		}
	}
}
