package ops

import (
	"fmt"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// Go models of the short kernel's staged forms (gen/scan_short.cuh) and
// the launcher's choice of form (shortLaunchFor).

// shortPlan is a short plan of op, dt, shape, axis under the wide knob env.
func shortPlan(t *testing.T, op ScanOp, dt dtype.DType, shape []int, axis int, env string) *ScanBackward {
	t.Helper()
	t.Setenv(scanShortEnv, "always")
	t.Setenv(scanShortWideEnv, env)
	p, err := NewScanBackward(ScanDesc{Op: op, DType: dt, Shape: shape, Axis: axis})
	if err != nil {
		t.Fatal(err)
	}
	if !p.short {
		t.Fatalf("%v axis %d: not a short plan", shape, axis)
	}
	return p
}

// shortArgs are contiguous operands of p, edited by edit.
func shortArgs(p *ScanBackward, edit func(a *ScanArgs)) ScanArgs {
	ct := func() Tensor { return fakeTensor(p.desc.DType, p.shape...) }
	a := ScanArgs{DY: ct(), X: ct(), Y: ct(), DX: ct()}
	if edit != nil {
		edit(&a)
	}
	return a
}

// TestScanShortLaunch pins the form, slices a thread, grid and shared
// memory of the sweep's layouts and their neighbours on an H100 (132
// SMs), and the knob's never (the first forms) and always.
func TestScanShortLaunch(t *testing.T) {
	transposed := func(a *ScanArgs) {
		for _, tp := range []*Tensor{&a.DY, &a.X, &a.Y, &a.DX} {
			tp.Strides = colMajor(tp.Shape)
		}
	}
	dyTransposed := func(a *ScanArgs) { a.DY.Strides = colMajor(a.DY.Shape) }
	cases := []struct {
		op     ScanOp
		dt     dtype.DType
		shape  []int
		axis   int
		env    string
		edit   func(a *ScanArgs)
		form   int32
		k      int32
		items  int32
		blocks int64
		smem   int
	}{
		// The sweep's layouts: 8 bf16 slices a thread (1024 a block), 4 f32.
		{ScanCumsum, dtype.BF16, []int{4194304, 4}, 1, "", nil, shortInner, 8, 4, 4096, 1024 * 6 * 2},
		{ScanLogcumsumexp, dtype.BF16, []int{4194304, 4}, 1, "", nil, shortInner, 8, 4, 4096, 3 * 1024 * 6 * 2},
		{ScanCummax, dtype.F32, []int{4194304, 4}, 1, "", nil, shortInner, 4, 4, 8192, 2 * 512 * 5 * 4},
		{ScanCumsum, dtype.BF16, []int{4, 4194304}, 0, "", nil, shortOuter, 8, 4, 4096, 1024 * 6 * 2},
		{ScanCumprod, dtype.F32, []int{4, 4194304}, 0, "", nil, shortOuter, 4, 4, 8192, 3 * 512 * 5 * 4},
		// The first forms.
		{ScanCumsum, dtype.BF16, []int{4194304, 4}, 1, "never", nil, shortInner, 1, 8, 32768, 128 * 5 * 2},
		{ScanCumsum, dtype.BF16, []int{4, 4194304}, 0, "never", nil, shortDirect, 1, 8, 32768, 0},
		// Few slices: one a thread (at least scanShortFill blocks per SM),
		// unless always.
		{ScanCumsum, dtype.BF16, []int{16384, 4}, 1, "", nil, shortInner, 1, 4, 128, 128 * 6 * 2},
		{ScanCumsum, dtype.BF16, []int{16384, 4}, 1, "always", nil, shortInner, 8, 4, 16, 1024 * 6 * 2},
		{ScanCumsum, dtype.BF16, []int{540672, 4}, 1, "", nil, shortInner, 4, 4, 1056, 512 * 6 * 2},
		// Rows of the innermost slice dim shorter than a block: direct,
		// unless always (a block a row).
		{ScanCumsum, dtype.F32, []int{8, 100, 4, 100}, 2, "", nil, shortDirect, 1, 4, 625, 0},
		{ScanCumsum, dtype.F32, []int{8, 100, 4, 100}, 2, "always", nil, shortOuter, 1, 4, 800, 128 * 5 * 4},
		// A longer axis: runs of 8, one slice a thread.
		{ScanCummin, dtype.F32, []int{1 << 16, 32}, 1, "", nil, shortInner, 1, 8, 512, 2 * 128 * 33 * 4},
		{ScanCummin, dtype.BF16, []int{16, 1 << 20}, 0, "", nil, shortOuter, 2, 8, 4096, 2 * 256 * 18 * 2},
		{ScanCummin, dtype.BF16, []int{16, 1 << 16}, 0, "", nil, shortOuter, 1, 8, 512, 2 * 128 * 18 * 2},
		// Transposed: the axis is outer in memory. dy alone transposed:
		// direct.
		{ScanCumsum, dtype.BF16, []int{1 << 16, 4}, 1, "", transposed, shortOuter, 1, 4, 512, 128 * 6 * 2},
		{ScanCumsum, dtype.BF16, []int{1 << 16, 4}, 1, "", dyTransposed, shortDirect, 1, 4, 512, 0},
		// A number: at most that many slices a thread.
		{ScanCumsum, dtype.BF16, []int{4194304, 4}, 1, "2", nil, shortInner, 2, 4, 16384, 256 * 6 * 2},
		{ScanCumsum, dtype.F32, []int{4, 4194304}, 0, "16", nil, shortOuter, 16, 4, 2048, 2048 * 5 * 4},
		// f64 n=32 cumprod: past the cap, direct.
		{ScanCumprod, dtype.F64, []int{1 << 16, 32}, 1, "", nil, shortDirect, 1, 8, 512, 0},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s %s %v axis %d %q", c.op, c.dt, c.shape, c.axis, c.env)
		p := shortPlan(t, c.op, c.dt, c.shape, c.axis, c.env)
		a := shortArgs(p, c.edit)
		var L scanLayout
		p.layout(&a, &L, &p.geom)
		sl := p.shortLaunchFor(&L, p.kernel.smem > 0, 132)
		if L.vec != c.form || L.split != c.k || L.items != c.items || sl.blocks != c.blocks || sl.smem != c.smem {
			t.Errorf("%s: form %d, %d slices a thread, runs of %d, %d blocks, smem %d; want %d, %d, %d, %d, %d", name,
				L.vec, L.split, L.items, sl.blocks, sl.smem, c.form, c.k, c.items, c.blocks, c.smem)
		}
		if sl.smem > p.kernel.smem {
			t.Errorf("%s: launch smem %d over the plan's %d", name, sl.smem, p.kernel.smem)
		}
	}
}

// shortSliceOffsets is scan_slice_offsets.
func shortSliceOffsets(L *scanLayout, s int64) (off [4]int64) {
	rem := s
	for d := int(L.srank) - 1; d >= 0; d-- {
		idx := rem
		if d > 0 {
			idx, rem = rem%L.sdim[d], rem/L.sdim[d]
		}
		for t := range off {
			off[t] += idx * L.sstride[t][d]
		}
	}
	return off
}

// shortWalk runs a Go model of a staged launch of the short kernel
// (scan_backward_short with L.vec 1 or 2: the block's slices, the chunk,
// short_stage's packs and element copies, short_put's positions,
// short_unstage) over blocks blocks of nt threads. For every element an
// operand's copy moves it checks that the shared-memory position holds
// element kk of local slice j, that slice j of the block is the global
// slice whose element kk that is, and that the position lies in the
// operand's buffer; it returns how often each element offset of each
// operand (dy, x, y staged; dx written) is moved. addr: the operands'
// base byte addresses; size: the element size.
func shortWalk(t *testing.T, L *scanLayout, used [4]bool, addr [4]int64, size, nt int, blocks int64) [4]map[int64]int {
	var seen [4]map[int64]int
	for u := range seen {
		seen[u] = map[int64]int{}
	}
	P := 16 / size
	n, ns, cs := int(L.n), int(L.units), nt*int(L.split)
	outer := L.vec == shortOuter
	for b := int64(0); b < blocks; b++ {
		var off [4]int64
		var first int64 // the block's first slice
		var cw int
		if outer {
			d0 := L.sdim[L.srank-1]
			nch := scanCeil(d0, int64(cs))
			row, j0 := b/nch, (b%nch)*int64(cs)
			cw = int(min(int64(cs), d0-j0))
			first = row*d0 + j0
			off = shortSliceOffsets(L, first)
		} else {
			first = b * int64(cs)
			cw = int(min(int64(cs), L.nslices-first))
			for u := range off {
				off[u] = first * L.sstride[u][0]
			}
		}
		if cw <= 0 {
			t.Fatalf("block %d: %d slices", b, cw)
		}
		rows, w := 1, cw*n
		if outer {
			rows, w = n, cw
		}
		for u := 0; u < 4; u++ {
			if !used[u] {
				continue
			}
			gst := L.astride[u]
			base := addr[u] + off[u]*int64(size)
			vec := base%16 == 0 && (rows == 1 || gst*int64(size)%16 == 0)
			// The kernel tests the staged operands together: vec holds
			// only where every one is aligned.
			if u < 3 {
				for o := 0; o < 3; o++ {
					ob := addr[o] + off[o]*int64(size)
					if used[o] && !(ob%16 == 0 && (rows == 1 || L.astride[o]*int64(size)%16 == 0)) {
						vec = false
					}
				}
			}
			move := func(k, e, at int) {
				var j, kk int
				if outer {
					j, kk = at/cs, at%cs
					j, kk = kk, j
				} else {
					j, kk = at/ns, at%ns
				}
				if at < 0 || at >= cs*ns || j >= cw || kk >= n {
					t.Fatalf("block %d operand %d row %d element %d: position %d (slice %d element %d) outside the buffer", b, u, k, e, at, j, kk)
				}
				g := off[u] + int64(k)*gst + int64(e)
				want := shortSliceOffsets(L, first+int64(j))[u] + int64(kk)*L.astride[u]
				if g != want {
					t.Fatalf("block %d operand %d: offset %d at slice %d element %d, want %d", b, u, g, j, kk, want)
				}
				seen[u][g]++
			}
			nvr := 0
			if vec {
				nvr = w / P
			}
			for i := 0; i < rows*nvr; i++ {
				k, v := i/nvr, i%nvr
				e := v * P
				if outer {
					for l := 0; l < P; l++ {
						move(k, e+l, k*cs+e+l)
					}
					continue
				}
				q := e / n
				r := e - q*n
				for l := 0; l < P; l++ {
					move(k, e+l, q*ns+r)
					if r++; r == n {
						r, q = 0, q+1
					}
				}
			}
			e0 := nvr * P
			tw := w - e0
			for i := 0; i < rows*tw; i++ {
				k := i / tw
				e := e0 + i - k*tw
				at := k*cs + e
				if !outer {
					at = e/n*ns + e%n
				}
				move(k, e, at)
			}
		}
	}
	return seen
}

// TestScanShortStageModel walks the staged forms (shortWalk) for many
// shapes, layouts and dtypes, as shortLaunchFor sets them up: every
// element of every operand is moved exactly once, into its slice's place.
func TestScanShortStageModel(t *testing.T) {
	padded := func(a *ScanArgs) {
		for _, tp := range []*Tensor{&a.DY, &a.X, &a.Y, &a.DX} {
			st := make([]int, len(tp.Shape))
			s := 1
			for d := len(tp.Shape) - 1; d >= 0; d-- {
				st[d] = s
				s *= tp.Shape[d] + 1
				if d == len(tp.Shape)-1 {
					s = tp.Shape[d] + 3
				}
			}
			tp.Strides = st
		}
	}
	shift := func(a *ScanArgs) { a.X.Buf.Addr += driver.DevicePtr(a.X.DType.Size()) }
	cases := []struct {
		shape []int
		axis  int
		edit  func(a *ScanArgs)
	}{
		{[]int{4500, 4}, 1, nil},
		{[]int{4500, 3}, 1, nil},
		{[]int{2100, 1}, 1, nil},
		{[]int{300, 31}, 1, nil},
		{[]int{1030, 5}, 1, shift},
		{[]int{4, 4500}, 0, nil},
		{[]int{3, 4500}, 0, shift},
		{[]int{7, 2050}, 0, padded},
		{[]int{32, 300}, 0, nil},
		{[]int{2, 8, 1000}, 1, nil},
		{[]int{3, 5, 2, 260}, 1, padded},
		{[]int{4, 1}, 0, nil},
	}
	for _, env := range []string{"", "always", "never"} {
		for _, dt := range dtype.All {
			for _, op := range []ScanOp{ScanCumsum, ScanCummax, ScanCumprod} {
				for _, c := range cases {
					name := fmt.Sprintf("%q %s %s %v axis %d", env, op, dt, c.shape, c.axis)
					p := shortPlan(t, op, dt, c.shape, c.axis, env)
					a := shortArgs(p, c.edit)
					var L scanLayout
					p.layout(&a, &L, &p.geom)
					sl := p.shortLaunchFor(&L, p.kernel.smem > 0, 132)
					if L.vec == shortDirect {
						continue
					}
					x, y := op.Saved()
					used := [4]bool{true, x, y, true}
					addr := [4]int64{int64(a.DY.Buf.Addr), int64(a.X.Buf.Addr), int64(a.Y.Buf.Addr), int64(a.DX.Buf.Addr)}
					nt := p.kernel.block
					if int64(sl.smem) != op.inputs()*int64(nt)*int64(L.split)*L.units*int64(dt.Size()) || sl.smem > p.kernel.smem {
						t.Errorf("%s: smem %d (plan %d)", name, sl.smem, p.kernel.smem)
					}
					seen := shortWalk(t, &L, used, addr, dt.Size(), nt, sl.blocks)
					ts := [4]*Tensor{&a.DY, &a.X, &a.Y, &a.DX}
					for u, tp := range ts {
						if !used[u] {
							continue
						}
						offs := offsetsOf(tp)
						if len(seen[u]) != len(offs) {
							t.Errorf("%s operand %d: %d elements moved, want %d", name, u, len(seen[u]), len(offs))
						}
						for _, o := range offs {
							if seen[u][o] != 1 {
								t.Fatalf("%s operand %d: element at %d moved %d times", name, u, o, seen[u][o])
							}
						}
					}
				}
			}
		}
	}
}

// TestScanShortBanks: the lanes of a warp reading element k of their
// slices (slices t, t + blockDim.x, ..) in the inner form hit distinct
// banks for 2- and 4-byte elements, and distinct banks per half warp for
// 8-byte ones, at shortStride's slice stride; the outer form's lanes read
// consecutive elements.
func TestScanShortBanks(t *testing.T) {
	for _, size := range []int{2, 4, 8} {
		for n := int64(1); n <= scanShortMaxN; n++ {
			ns := shortStride(n, size)
			if ns < n {
				t.Fatalf("size %d n %d: stride %d", size, n, ns)
			}
			lanes := 32
			if size == 8 {
				lanes = 16
			}
			for k := int64(0); k < n; k++ {
				words := map[int64]bool{}
				banks := map[int64]bool{}
				for lane := int64(0); lane < int64(lanes); lane++ {
					w := (lane*ns + k) * int64(size) / 4
					if !words[w] {
						words[w] = true
						banks[w%32] = true
					}
				}
				if len(banks) != len(words) {
					t.Errorf("size %d n %d element %d: %d words on %d banks", size, n, k, len(words), len(banks))
				}
			}
		}
	}
}
