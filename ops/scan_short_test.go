package ops

import (
	"fmt"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
)

// Tests of the short mapping's plan (scan_short.go) and Go models of its
// kernel's index math (gen/scan_short.cuh).

// TestScanShortPolicy pins where a plan takes the short kernel: an axis of at
// most 32 elements over at least 2^14 slices, either layout (the sweep's
// [4194304, 4] along axis 1 and [4, 4194304] along axis 0), every op and
// dtype; not with fewer slices or a longer axis; the knob's never and
// always.
func TestScanShortPolicy(t *testing.T) {
	t.Setenv(scanShortEnv, "")
	cases := []struct {
		shape []int
		axis  int
		short bool
	}{
		{[]int{4194304, 4}, 1, true},
		{[]int{4, 4194304}, 0, true},
		{[]int{2, 32, 8192}, 1, true},
		{[]int{16384, 32}, 1, true},
		{[]int{16384, 1}, 1, true},
		{[]int{1, 16384}, 1, false}, // one slice of 16384
		{[]int{16383, 4}, 1, false}, // too few slices: the col mapping
		{[]int{16384, 33}, 1, false},
		{[]int{33, 16384}, 0, false},
		{[]int{4096, 4096}, 0, false},
		{[]int{4096, 4096}, 1, false},
		{[]int{1000, 7}, 1, false},
		{[]int{0, 4}, 1, false},
	}
	for _, c := range cases {
		for _, op := range ScanOps() {
			for _, dt := range dtype.All {
				p, err := NewScanBackward(ScanDesc{Op: op, DType: dt, Shape: c.shape, Axis: c.axis})
				if err != nil {
					t.Fatal(err)
				}
				want := fmt.Sprintf("scan_bw_%s_%s_short", op, dt.Suffix())
				if got := p.Kernel().Name; (got == want) != c.short || p.short != c.short {
					t.Errorf("%s %s %v axis %d: kernel %s (short %v), want short %v", op, dt, c.shape, c.axis, got, p.short, c.short)
				}
				if !c.short {
					continue
				}
				if p.WorkspaceSize() != 0 || p.pairK != nil || p.stripK != nil {
					t.Errorf("%s %s %v: workspace %d, pair %v, strip %v", op, dt, c.shape, p.WorkspaceSize(), p.pairK, p.stripK)
				}
				if p.kernel.block != scanShortBlock {
					t.Errorf("%s %s: block %d, want %d (the spec's)", op, dt, p.kernel.block, scanShortBlock)
				}
				n := int64(c.shape[c.axis])
				sm := max(scanShortSmem(op, dt, n|1, scanShortBlock),
					scanShortSmem(op, dt, shortStride(n, dt.Size()), scanShortBlock*shortSlices(dt, n, scanShortBlock)))
				if want := int(sm); sm <= scanShortSmemCap && (p.kernel.smem != want || p.kernel.smemCap != scanShortSmemCap) ||
					sm > scanShortSmemCap && p.kernel.smem != 0 {
					t.Errorf("%s %s %v: smem %d cap %d, want %d", op, dt, c.shape, p.kernel.smem, p.kernel.smemCap, want)
				}
			}
		}
	}
	// Staged shared memory: dy, x, y by op; the slices a thread.
	if got := scanShortSmem(ScanCumsum, dtype.F32, 5, 128); got != 128*5*4 {
		t.Errorf("cumsum f32 ns=5: %d bytes", got)
	}
	if got := scanShortSmem(ScanCummax, dtype.BF16, 3, 256); got != 2*256*3*2 {
		t.Errorf("cummax bf16 ns=3, 256 slices: %d bytes", got)
	}
	if got := scanShortSmem(ScanCumprod, dtype.F64, 33, 128); got <= scanShortSmemCap {
		t.Errorf("cumprod f64 n=32: %d bytes fit the cap: the case of the in-place path is gone", got)
	}
	for _, c := range []struct {
		dt   dtype.DType
		n, k int64
	}{{dtype.BF16, 4, 8}, {dtype.F32, 4, 4}, {dtype.F64, 4, 2}, {dtype.BF16, 1, 16}, {dtype.F16, 16, 2},
		{dtype.F32, 16, 1}, {dtype.BF16, 32, 1}, {dtype.F64, 32, 1}} {
		if got := shortSlices(c.dt, c.n, scanShortBlock); got != c.k {
			t.Errorf("%s n=%d: %d slices a thread, want %d", c.dt, c.n, got, c.k)
		}
	}
	// The wide forms' largest shared memory stays far below the cap: at
	// most three operands of scanShortChunk bytes, their slices at most
	// twice as far apart as their length.
	for _, dt := range dtype.All {
		for n := int64(1); n <= scanShortMaxN; n++ {
			k := shortSlices(dt, n, scanShortBlock)
			if sm := scanShortSmem(ScanCumprod, dt, shortStride(n, dt.Size()), scanShortBlock*k); k > 1 && sm > 6*scanShortChunk {
				t.Errorf("%s n=%d: %d bytes at %d slices a thread", dt, n, sm, k)
			}
		}
	}
	t.Setenv(scanShortEnv, "never")
	if p, _ := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{4194304, 4}, Axis: 1}); p.short {
		t.Errorf("%s=never: short plan", scanShortEnv)
	}
	t.Setenv(scanShortEnv, "always")
	for _, c := range []struct {
		shape []int
		axis  int
		short bool
	}{{[]int{10, 4}, 1, true}, {[]int{3}, 0, true}, {[]int{4, 10}, 0, true}, {[]int{10, 33}, 1, false}, {[]int{0, 3}, 1, false}} {
		p, err := NewScanBackward(ScanDesc{Op: ScanCummax, DType: dtype.BF16, Shape: c.shape, Axis: c.axis})
		if err != nil {
			t.Fatal(err)
		}
		if p.short != c.short || (p.Kernel().Name == "scan_bw_cummax_bf16_short") != c.short {
			t.Errorf("%s=always %v axis %d: kernel %s, short %v", scanShortEnv, c.shape, c.axis, p.Kernel().Name, c.short)
		}
	}
}

// TestScanShortStaged: the kernel stages only where every operand the op
// reads, and dx, has unit axis stride and slices n apart in one merged dim.
func TestScanShortStaged(t *testing.T) {
	t.Setenv(scanShortEnv, "always")
	mk := func(op ScanOp, shape []int, axis int) *ScanBackward {
		p, err := NewScanBackward(ScanDesc{Op: op, DType: dtype.F32, Shape: shape, Axis: axis})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	lay := func(p *ScanBackward, edit func(a *ScanArgs)) scanLayout {
		ct := fakeTensor(p.desc.DType, p.shape...)
		a := ScanArgs{DY: ct, X: ct, Y: ct, DX: ct}
		edit(&a)
		var L scanLayout
		p.layout(&a, &L, &p.geom)
		return L
	}
	none := func(*ScanArgs) {}
	prod := mk(ScanCumprod, []int{300, 5}, 1)
	if L := lay(prod, none); !shortStaged(ScanCumprod, &L) {
		t.Errorf("contiguous [300 5] axis 1: not staged: %+v", L)
	}
	// Rank 3, slice dims merge.
	p3 := mk(ScanCumprod, []int{7, 45, 3}, 2)
	if L := lay(p3, none); !shortStaged(ScanCumprod, &L) || L.srank != 1 {
		t.Errorf("contiguous [7 45 3] axis 2: not staged: %+v", L)
	}
	// Padded rows of y: not staged for cumprod, staged for cumsum (which
	// does not read y).
	padY := func(a *ScanArgs) { a.Y.Strides = []int{8, 1} }
	if L := lay(prod, padY); shortStaged(ScanCumprod, &L) {
		t.Errorf("padded y: staged")
	}
	sum := mk(ScanCumsum, []int{300, 5}, 1)
	if L := lay(sum, padY); !shortStaged(ScanCumsum, &L) {
		t.Errorf("cumsum, padded y: not staged")
	}
	// Padded dx, transposed dy: not staged.
	if L := lay(sum, func(a *ScanArgs) { a.DX.Strides = []int{6, 1} }); shortStaged(ScanCumsum, &L) {
		t.Errorf("padded dx: staged")
	}
	if L := lay(sum, func(a *ScanArgs) { a.DY.Strides = []int{1, 300} }); shortStaged(ScanCumsum, &L) {
		t.Errorf("transposed dy: staged")
	}
	// An outer axis: not staged (read in place, coalesced across slices).
	outer := mk(ScanCumsum, []int{4, 300}, 0)
	if L := lay(outer, none); shortStaged(ScanCumsum, &L) {
		t.Errorf("outer axis: staged")
	}
	// Two slice dims that do not merge: not staged.
	mid := mk(ScanCumsum, []int{3, 4, 100}, 1)
	if L := lay(mid, none); shortStaged(ScanCumsum, &L) || L.srank != 2 {
		t.Errorf("inner axis of rank 3: staged, srank %d", L.srank)
	}
}

// TestScanShortRunModel runs a Go model of short_slice's walk: runs of N
// elements (L.items: 4, or SCAN_SHORT_ITEMS, 8) taken against scan order, each index of a
// run in scan order, the forward state of a run from exactly the elements
// before it in scan order, and y before it (yb) the element just before
// it in scan order: every element once, V carried in reverse scan order.
func TestScanShortRunModel(t *testing.T) {
	for _, N := range []int{scanShortItems4, scanShortItems} {
		testShortRuns(t, N)
	}
}

func testShortRuns(t *testing.T, N int) {
	for n := 1; n <= scanShortMaxN; n++ {
		for _, rev := range []bool{false, true} {
			// pos is the scan position of element k.
			pos := func(k int) int {
				if rev {
					return n - 1 - k
				}
				return k
			}
			R := (n + N - 1) / N
			next := n - 1 // the scan position the walk must reach next (against scan order)
			for j0 := 0; j0 < R; j0++ {
				j := R - 1 - j0
				if rev {
					j = j0
				}
				k0, cnt := j*N, min(N, n-j*N)
				// finish walks indices N-1 .. 0 of the run: scan order backwards.
				for i := N - 1; i >= 0; i-- {
					ok := i < cnt
					k := k0 + i
					if rev {
						ok, k = i >= N-cnt, k0+N-1-i
					}
					if !ok {
						continue
					}
					if pos(k) != next {
						t.Fatalf("N %d n %d rev %v: run %d index %d is element %d at scan position %d, want %d", N, n, rev, j, i, k, pos(k), next)
					}
					next--
				}
				// The forward walk before the run and yb.
				first := k0
				if rev {
					first = k0 + cnt - 1
				}
				var before []int
				if rev {
					for k := n - 1; k >= k0+cnt; k-- {
						before = append(before, k)
					}
				} else {
					for k := 0; k < k0; k++ {
						before = append(before, k)
					}
				}
				for p, k := range before {
					if pos(k) != p {
						t.Fatalf("n %d rev %v run %d: forward walk step %d reads scan position %d", n, rev, j, p, pos(k))
					}
				}
				if len(before) != pos(first) {
					t.Fatalf("n %d rev %v run %d: forward walk of %d elements before scan position %d", n, rev, j, len(before), pos(first))
				}
				kb := k0 - 1
				if rev {
					kb = k0 + cnt
				}
				if has := kb >= 0 && kb < n; has != (pos(first) > 0) || has && pos(kb) != pos(first)-1 {
					t.Fatalf("n %d rev %v run %d: yb from element %d", n, rev, j, kb)
				}
			}
			if next != -1 {
				t.Fatalf("n %d rev %v: walk stopped at scan position %d", n, rev, next)
			}
		}
	}
}
