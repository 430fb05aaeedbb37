package ops

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

func TestReduceAxesPaths(t *testing.T) {
	for _, c := range []struct {
		shape, axes []int
		path        string
		gsize       []int64
		n           int64
	}{
		{[]int{64, 128, 64, 64}, []int{-2, -1}, "single", []int64{64 * 128, 64 * 64}, 64 * 64},
		{[]int{32, 256, 56, 56}, []int{0, 2, 3}, "seg", []int64{32, 256, 56 * 56}, 32 * 56 * 56},
		{[]int{32, 256, 56, 56}, []int{3, 0, -2}, "seg", []int64{32, 256, 56 * 56}, 32 * 56 * 56},
		{[]int{2, 3, 4}, []int{0, 1, 2}, "single", []int64{24}, 24},
		{[]int{2, 3, 4, 5}, []int{0, 2}, "seg", []int64{2, 3, 4, 5}, 8},
		{[]int{2, 1, 4}, []int{0, 2}, "single", []int64{8}, 8},        // the size-1 kept dim drops
		{[]int{5, 1, 1, 7}, []int{1, 2}, "single", []int64{35, 1}, 1}, // reduced dims of size 1
		{[]int{1, 1}, []int{0, 1}, "single", []int64{1}, 1},
		{[]int{3, 4, 5}, []int{0, 1}, "single", []int64{12, 5}, 12},
		{[]int{2, 3, 4, 5, 6}, []int{1, 3}, "seg", []int64{2, 3, 4, 5, 6}, 15},
	} {
		p, err := NewReduceBackward(ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: c.shape, Axes: c.axes, Correction: 1})
		if err != nil {
			t.Fatalf("%v over %v: %v", c.shape, c.axes, err)
		}
		m := p.multi
		if p.Path() != c.path || !equal64(m.gsize, c.gsize) || m.n != c.n || p.k != c.n {
			t.Errorf("%v over %v: path %q groups %v n %d, want %q %v %d", c.shape, c.axes, p.Path(), m.gsize, m.n, c.path, c.gsize, c.n)
		}
		if want := 2 / (float64(c.n) - 1); p.scale != want && !(math.IsInf(want, 0) && math.IsInf(p.scale, 0)) {
			t.Errorf("%v over %v: scale %v, want %v", c.shape, c.axes, p.scale, want)
		}
		if p.Path() == "seg" {
			L := &m.seg
			if L.k != c.n || L.tiles != L.slices*L.nchunks || L.chunk*L.nchunks < L.k || L.chunk*(L.nchunks-1) >= L.k || L.chunk%4 != 0 && L.nchunks > 1 {
				t.Errorf("%v over %v: seg layout %+v", c.shape, c.axes, L)
			}
			if p.ws != (L.tiles*8+15)&^15 {
				t.Errorf("%v over %v: workspace %d for %d tiles", c.shape, c.axes, p.ws, L.tiles)
			}
		}
		if !strings.Contains(p.Kernel().Name, "reduce_bw_var_f32_") {
			t.Errorf("%v over %v: kernel %s", c.shape, c.axes, p.Kernel().Name)
		}
	}
}

func equal64(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReduceAxesSegLayout pins the seg layout of dims (0, 2, 3) of
// [32, 256, 56, 56] and of dims (0, 2) of [2, 3, 4, 5].
func TestReduceAxesSegLayout(t *testing.T) {
	p, err := NewReduceBackward(ReduceDesc{Op: ReduceMax, DType: dtype.F32, Shape: []int{32, 256, 56, 56}, Axes: []int{0, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	L := &p.multi.seg
	if L.srank != 1 || L.sdim[0] != 256 || L.sstride[0][0] != 3136 || L.cvec != 1 || L.sstride[1][0] != 32 ||
		L.sstride[2][0] != 256*3136 || L.kstride != [2]int64{1, 3136} || L.slices != 256 || L.nchunks != 4 || L.chunk != 25088 {
		t.Errorf("layout %+v", *L)
	}
	p, err = NewReduceBackward(ReduceDesc{Op: ReduceSum, DType: dtype.BF16, Shape: []int{2, 3, 4, 5}, Axes: []int{0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	L = &p.multi.seg
	if L.srank != 2 || L.sdim[0] != 3 || L.sdim[1] != 5 || L.sstride[0][0] != 20 || L.sstride[0][1] != 1 || L.cvec != 1 ||
		L.sstride[1][0] != 2 || L.sstride[2][0] != 60 || L.kstride != [2]int64{5, 4} || L.nchunks != 1 || p.ws != 0 {
		t.Errorf("layout %+v ws %d", *L, p.ws)
	}
}

func TestReduceAxesErrors(t *testing.T) {
	for _, c := range []struct {
		desc ReduceDesc
		want error
		text string
	}{
		{ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{2, 3}, Axes: []int{}}, ErrAxis, "axes is empty"},
		{ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{2, 3}, Axes: []int{0, -2}}, ErrAxis, "twice"},
		{ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{2, 3}, Axes: []int{0, 2}}, ErrAxis, "axes [0 2]"},
		{ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{2, 3}, Axis: 1, Axes: []int{0}}, ErrParam, "both set"},
		{ReduceDesc{Op: ReduceMax, DType: dtype.F32, Shape: []int{2, 0, 3}, Axes: []int{1, 2}}, ErrShape, "no element"},
		{ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: []int{2, 3, 4}, Axes: []int{0, 2}, Correction: math.Inf(1)}, ErrParam, "finite"},
		{ReduceDesc{Op: ReduceProd, DType: dtype.F32, Shape: []int{1 << 17, 2, 1 << 16}, Axes: []int{0, 2}}, ErrShape, "counts over"},
	} {
		_, err := NewReduceBackward(c.desc)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%+v: error %v, want %v containing %q", c.desc, err, c.want, c.text)
		}
	}
	// One axis in Axes is the single-axis plan; Desc keeps Axes.
	p, err := NewReduceBackward(ReduceDesc{Op: ReduceMax, DType: dtype.F16, Shape: []int{4, 5}, Axes: []int{-1}})
	if err != nil || p.multi != nil || p.axis != 1 || p.Path() != "" {
		t.Fatalf("one axis: %v, %+v", err, p)
	}
	if d := p.Desc(); len(d.Axes) != 1 || d.Axes[0] != -1 || d.Axis != 0 {
		t.Errorf("Desc %+v", d)
	}
}

func TestReduceAxesCheck(t *testing.T) {
	mk := func(shape, axes []int) *ReduceBackward {
		p, err := NewReduceBackward(ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: shape, Axes: axes, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	seg := mk([]int{4, 6, 5, 3}, []int{0, 2, 3})
	single := mk([]int{4, 6, 5, 3}, []int{2, 3})
	if got := seg.KeepdimShape(); !shapeEqual(got, []int{1, 6, 1, 1}) {
		t.Errorf("keepdim %v", got)
	}
	if got := seg.ReducedShape(); !shapeEqual(got, []int{6}) {
		t.Errorf("reduced %v", got)
	}
	for _, p := range []*ReduceBackward{seg, single} {
		a := redArgs(p)
		if err := p.Check(&a); err != nil {
			t.Fatalf("%s keepdim: %v", p.Path(), err)
		}
		a.DY = redTensor(dtype.F32, p.reduced...)
		a.Y = redTensor(dtype.F32, p.reduced...)
		if err := p.Check(&a); err != nil {
			t.Fatalf("%s reduced form: %v", p.Path(), err)
		}
		a.DY = redTensor(dtype.F32, 6, 1)
		if err := p.Check(&a); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "axes") {
			t.Errorf("%s: bad dy shape: %v", p.Path(), err)
		}
	}
	// Strides: a transposed x is an error for the seg path; for the single
	// path strides that merge over the groups are accepted, others not.
	a := redArgs(seg)
	a.X.Strides = []int{1, 4, 24, 120}
	a.X.Buf.Size *= 2
	if err := seg.Check(&a); !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "contiguous") {
		t.Errorf("seg strided x: %v", err)
	}
	a = redArgs(single)
	a.X.Strides = []int{200, 32, 3, 1} // the kept group [4, 6] does not merge
	a.X.Buf.Size = 4 * 200 * 4
	if err := single.Check(&a); !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "merge") {
		t.Errorf("single unmergeable x: %v", err)
	}
	a.X.Strides = []int{6 * 16, 16, 3, 1} // padded between the groups: merges
	if err := single.Check(&a); err != nil {
		t.Errorf("single padded x: %v", err)
	}
	var v viewTensor
	if !single.view(&a.X, false, &v) || !shapeEqual(v.shape[:v.rank], []int{24, 15}) || !shapeEqual(v.strides[:v.rank], []int{16, 1}) {
		t.Errorf("view %+v", v)
	}
	a.DY = Tensor{Buf: driver.Buffer{Addr: a.DY.Buf.Addr, Size: 1 << 20}, DType: dtype.F32, Shape: []int{4, 6}, Strides: []int{1, 4}}
	if single.view(&a.DY, true, &v) {
		t.Errorf("transposed dy (reduced form) viewed as %+v", v)
	}
	if err := single.Check(&a); !errors.Is(err, ErrLayout) {
		t.Errorf("single transposed dy: %v", err)
	}
	a.DY = Tensor{Buf: a.DY.Buf, DType: dtype.F32, Shape: []int{4, 6, 1, 1}, Strides: []int{6, 1, 9, 9}}
	if !single.view(&a.DY, true, &v) || !shapeEqual(v.shape[:v.rank], []int{24, 1}) || v.strides[0] != 1 {
		t.Errorf("dy (keepdim) view %+v", v)
	}
}

// FuzzReduceAxes: descriptors with random axes sets and mutated operands
// give a plan and pass Check, or fail with a sentinel; a plan's layout
// covers every slice.
func FuzzReduceAxes(f *testing.F) {
	f.Add(uint8(8), uint8(1), uint8(4), 32, 25, 9, uint8(0b1101), int8(0), uint8(0), 1.0)
	f.Add(uint8(3), uint8(3), uint8(5), 3, 1, 7, uint8(0b10101), int8(-2), uint8(9), 0.0)
	f.Add(uint8(5), uint8(2), uint8(3), 0, 4, 2, uint8(0), int8(1), uint8(33), 2.0)
	sentinels := []error{ErrUnsupported, ErrShape, ErrDType, ErrMissing, ErrMissingSaved, ErrBufferTooSmall,
		ErrLayout, ErrAxis, ErrRank, ErrParam}
	f.Fuzz(func(t *testing.T, op, dt, rank uint8, d0, d1, d2 int, mask uint8, neg int8, mut uint8, corr float64) {
		shape := make([]int, int(rank%9))
		for i := range shape {
			shape[i] = []int{d0, d1, d2}[i%3] % 40
			if i >= 3 {
				shape[i] = 1 + i%3
			}
		}
		axes := []int{}
		for d := range shape {
			if mask>>d&1 == 1 {
				a := d
				if neg < 0 && d%2 == 0 {
					a = d - len(shape)
				}
				axes = append(axes, a)
			}
		}
		if neg > 0 && len(axes) > 0 {
			axes = append(axes, axes[0]) // a duplicate
		}
		p, err := NewReduceBackward(ReduceDesc{Op: ReduceOp(op % 11), DType: dtype.DType(dt % 6), Shape: shape, Axes: axes, Correction: corr})
		if err != nil {
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error %v wraps no sentinel", err)
		}
		a := redArgs(p)
		tt := []*Tensor{&a.DY, &a.X, &a.Y, &a.DX}[mut%4]
		switch mut >> 2 % 4 {
		case 1:
			tt.Strides = make([]int, len(tt.Shape))
			for i := range tt.Strides {
				tt.Strides[i] = int(d0%7) + i
			}
		case 2:
			tt.Shape = append([]int(nil), tt.Shape...)
			if len(tt.Shape) > 0 {
				tt.Shape[0]++
			}
		case 3:
			a.Workspace.Size--
		}
		if err := p.Check(&a); err != nil {
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error %v wraps no sentinel", err)
		}
		if p.multi != nil && p.multi.inner != nil && p.numel > 0 {
			// The views Run hands the single-axis plan pass its Check.
			var v [4]viewTensor
			var in ReduceArgs
			p.innerArgs(&a, &in, &v)
			if err := p.multi.inner.Check(&in); err != nil {
				t.Fatalf("%v over %v: the coalesced view fails the single-axis plan's Check: %v", shape, axes, err)
			}
		}
		if p.multi != nil && p.multi.segK != nil && p.numel > 0 {
			L := &p.multi.seg
			if L.slices*L.k != p.numel || L.tiles != L.slices*L.nchunks || L.chunk*L.nchunks < L.k || L.srank+L.cvec+1 > MaxRank {
				t.Fatalf("seg layout %+v for %v over %v", *L, shape, axes)
			}
		}
	})
}

// segOffsets is the seg kernel's walk (gen/reduce_seg.cuh: red_seg_kept,
// red_seg_outer, red_seg_each) in Go: the x offset of every element each
// tile visits, in [slice][position] order (position j = chunk*chunk + the
// element's index in the chunk), with packs of n elements where vec.
func segOffsets(L *reduceLayout, vec bool, n int64) [][]int64 {
	out := make([][]int64, L.slices)
	for t := int64(0); t < L.tiles; t++ {
		c := t / L.nchunks
		j0 := (t - c*L.nchunks) * L.chunk
		ln := min(L.chunk, L.k-j0)
		ko, rem := int64(0), c
		for d := int(L.srank) - 1; d >= 0; d-- {
			idx := rem
			if d > 0 {
				idx, rem = rem%L.sdim[d], rem/L.sdim[d]
			}
			ko += idx * L.sstride[0][d]
		}
		outer := func(q int64) int64 {
			o, rem := int64(0), q
			for d := int(L.cvec) - 1; d >= 0; d-- {
				idx := rem
				if d > 0 {
					idx, rem = rem%L.sstride[1][d], rem/L.sstride[1][d]
				}
				o += idx * L.sstride[2][d]
			}
			return o
		}
		if out[c] == nil {
			out[c] = make([]int64, L.k)
		}
		if vec {
			bp := L.kstride[1] / n
			for p := j0 / n; p < (j0+ln)/n; p++ {
				q := bcDivModel(p, L.flat.magic[0], L.flat.shift[0]) // p / bp
				for e := int64(0); e < n; e++ {
					out[c][p*n+e] = ko + outer(q) + (p-q*bp)*n + e
				}
			}
			continue
		}
		for j := j0; j < j0+ln; j++ {
			q := bcDivModel(j, L.flat.magic[1], L.flat.shift[1]) // j / L.kstride[1]
			out[c][j] = ko + outer(q) + (j-q*L.kstride[1])*L.kstride[0]
		}
	}
	return out
}

// TestReduceAxesSegWalk: the seg kernel's walk of the plan's layout visits
// the elements of each slice (the kept dims' row-major index, as dy and y)
// in the order of the reduced dims' row-major index, once each, with and
// without packs, over chunked and unchunked slices.
func TestReduceAxesSegWalk(t *testing.T) {
	for _, c := range []walkCase{
		{[]int{4, 16, 28, 28}, []int{0, 2, 3}}, {[]int{3, 5, 33}, []int{0, 2}}, {[]int{2, 3, 4, 5}, []int{0, 2}},
		{[]int{2, 3, 2, 3, 2}, []int{0, 2, 4}}, {[]int{2, 3, 2, 3, 2, 3, 2, 3}, []int{0, 2, 4, 6}},
		{[]int{3, 2, 3, 2, 3, 2, 3, 2}, []int{1, 3, 5, 7}}, {[]int{16, 4, 4096}, []int{0, 2}}, {[]int{64, 2, 3000}, []int{0, 2}},
		{[]int{3, 2, 5, 1, 8}, []int{0, 2, 4}}, {[]int{5, 2, 8, 3}, []int{1, 3}},
	} {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F64} {
			p, err := NewReduceBackward(ReduceDesc{Op: ReduceMax, DType: dt, Shape: c.shape, Axes: c.axes})
			if err != nil || p.Path() != "seg" {
				t.Fatalf("%v over %v: %v, path %q", c.shape, c.axes, err, p.Path())
			}
			L := &p.multi.seg
			n := int64(16 / dt.Size())
			// The reference walk: slice s over the kept dims, position j over
			// the reduced dims, both row-major.
			var kept, red []int
			for d := range c.shape {
				if slices.Contains(c.axes, d) {
					red = append(red, d)
				} else {
					kept = append(kept, d)
				}
			}
			stride := make([]int64, len(c.shape))
			s := int64(1)
			for d := len(c.shape) - 1; d >= 0; d-- {
				stride[d] = s
				s *= int64(c.shape[d])
			}
			at := func(sl, j int64) int64 {
				o := int64(0)
				for i := len(kept) - 1; i >= 0; i-- {
					o += sl % int64(c.shape[kept[i]]) * stride[kept[i]]
					sl /= int64(c.shape[kept[i]])
				}
				for i := len(red) - 1; i >= 0; i-- {
					o += j % int64(c.shape[red[i]]) * stride[red[i]]
					j /= int64(c.shape[red[i]])
				}
				return o
			}
			pv, err := NewReduceBackward(ReduceDesc{Op: ReduceVar, DType: dt, Shape: c.shape, Axes: c.axes})
			if err != nil || pv.multi.segcK == nil {
				t.Fatalf("%v over %v: var: %v, no segc kernel", c.shape, c.axes, err)
			}
			for _, layout := range []*reduceLayout{L, &pv.multi.segc} {
				if layout.nchunks*layout.slices != layout.tiles || layout.chunk*layout.nchunks < layout.k {
					t.Fatalf("%v over %v: layout %+v", c.shape, c.axes, *layout)
				}
				c.check(t, dt, layout, n, at)
			}
		}
	}
}

func (c walkCase) check(t *testing.T, dt dtype.DType, L *reduceLayout, n int64, at func(sl, j int64) int64) {
	t.Helper()
	for _, vec := range []bool{false, true} {
		if vec && (L.kstride[0] != 1 || L.kstride[1]%n != 0) {
			continue
		}
		got := segOffsets(L, vec, n)
		for sl := range got {
			for j, o := range got[sl] {
				if want := at(int64(sl), int64(j)); o != want {
					t.Fatalf("%v over %v %s vec %v: slice %d position %d at %d, want %d (layout %+v)", c.shape, c.axes, dt, vec, sl, j, o, want, *L)
				}
			}
		}
	}
}

type walkCase struct{ shape, axes []int }

// TestReduceAxesSegcPlan: the clustered seg kernel's cut of the bench case,
// its shared memory bound, and the environment's "never".
func TestReduceAxesSegcPlan(t *testing.T) {
	p, err := NewReduceBackward(ReduceDesc{Op: ReduceStd, DType: dtype.F32, Shape: []int{32, 256, 56, 56}, Axes: []int{0, 2, 3}, Correction: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := p.multi
	if m.segcK == nil || m.segc.chunk != 12544 || m.segc.nchunks != redSegCluster || m.segc.tiles != 256*redSegCluster ||
		m.segcK.smem != 12544*4 || !strings.HasSuffix(p.Kernel().Name, "_segc") {
		t.Fatalf("segc %+v, smem %v, kernel %s", m.segc, m.segcK, p.Kernel().Name)
	}
	// A slice of 8*60000 f32: a chunk of 240000 bytes, more than a block holds.
	p, err = NewReduceBackward(ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: []int{8, 3, 60000}, Axes: []int{0, 2}})
	if err != nil || p.multi.segcK != nil || !strings.HasSuffix(p.Kernel().Name, "_seg") {
		t.Fatalf("large slices: %v, %+v", err, p.multi)
	}
	for _, op := range []ReduceOp{ReduceMax, ReduceSum, ReduceProd} {
		p, err = NewReduceBackward(ReduceDesc{Op: op, DType: dtype.F32, Shape: []int{4, 3, 60}, Axes: []int{0, 2}})
		if err != nil || p.multi.segcK != nil {
			t.Fatalf("%s: %v, %+v", op, err, p.multi)
		}
	}
	t.Setenv(reduceSegcEnv, "never")
	p, err = NewReduceBackward(ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: []int{4, 3, 60}, Axes: []int{0, 2}})
	if err != nil || p.multi.segcK != nil {
		t.Fatalf("never: %v, %+v", err, p.multi)
	}
}

// TestReduceAxesSegsPlan: var, std, max and min over [R, C, S] with short
// segments take the segs kernel (tiles of G slices whose rows are whole
// 16-byte packs, the rows or, for max and min, their flags in shared
// memory), and the tile's arithmetic
// (a pack position's two slices, each slice's positions and halves)
// covers every element of every slice once.
func TestReduceAxesSegsPlan(t *testing.T) {
	for _, c := range []struct {
		op           ReduceOp
		dt           dtype.DType
		shape        []int
		g, tiles, rs int64 // 0: no segs kernel
	}{
		{ReduceVar, dtype.BF16, []int{256, 2048, 7, 7}, 8, 256, 256},
		{ReduceMax, dtype.F32, []int{256, 2048, 7, 7}, 4, 512, 256},
		{ReduceStd, dtype.F64, []int{4, 6, 7, 7}, 2, 3, 4},
		{ReduceMin, dtype.F16, []int{3, 16, 7, 7}, 8, 2, 3},
		{ReduceVar, dtype.BF16, []int{2, 8, 14, 14}, 2, 4, 2},
		{ReduceVar, dtype.BF16, []int{4, 6, 7, 7}, 0, 0, 0},      // 6 slices: no tiles of 8
		{ReduceProd, dtype.F32, []int{256, 2048, 7, 7}, 0, 0, 0}, // prod keeps the seg kernel
		{ReduceSum, dtype.F32, []int{256, 2048, 7, 7}, 0, 0, 0},  // no statistics
		{ReduceVar, dtype.F32, []int{32, 256, 56, 56}, 0, 0, 0},  // segments of whole packs
		{ReduceVar, dtype.BF16, []int{600, 64, 7, 7}, 0, 0, 0},   // 600 rows outgrow shared memory
		{ReduceMax, dtype.BF16, []int{600, 64, 7, 7}, 8, 8, 600}, // ... but not as flags
		{ReduceVar, dtype.BF16, []int{4, 16, 3, 1}, 0, 0, 0},     // segments under a pack
	} {
		p, err := NewReduceBackward(ReduceDesc{Op: c.op, DType: c.dt, Shape: c.shape, Axes: []int{0, 2, 3}, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		m := p.multi
		if m == nil || m.inner != nil {
			t.Fatalf("%s %v: no seg plan", c.op, c.shape)
		}
		if (m.segsK != nil) != (c.g > 0) {
			t.Errorf("%s %s %v: segs kernel %v, want %v", c.op, c.dt, c.shape, m.segsK != nil, c.g > 0)
			continue
		}
		if c.g == 0 {
			continue
		}
		L := &m.segs
		if int64(L.group) != c.g || L.tiles != c.tiles || L.chunk != c.rs || !strings.HasSuffix(p.Kernel().Name, "_segs") {
			t.Errorf("%s %s %v: G %d tiles %d rows %d kernel %s, want %d %d %d", c.op, c.dt, c.shape, L.group, L.tiles, L.chunk,
				p.Kernel().Name, c.g, c.tiles, c.rs)
		}
		n := int64(16 / c.dt.Size())
		S, G := L.kstride[1], int64(L.group)
		P := G * S / n
		if G*S%n != 0 || int64(m.segsK.smem) != L.chunk*P*segsKeep(c.op) || m.segsK.smem > redStripSmem {
			t.Errorf("%s %v: a row of %d elements, smem %d", c.op, c.shape, G*S, m.segsK.smem)
		}
		// The kernel's halves: position j's first na elements in slice
		// ga, the rest in ga+1; slice g sums positions j0..j1, taking the
		// half whose slice is g.
		owner := make([]int64, G*S) // element of the row -> slices that counted it
		for g := int64(0); g < G; g++ {
			j0, j1 := g*S/n, (g*S+S-1)/n
			for j := j0; j <= j1; j++ {
				ga := j * n / S
				na := min((ga+1)*S-j*n, n)
				lo, hi := j*n, j*n+na
				if ga != g {
					lo, hi = j*n+na, j*n+n
				}
				for e := lo; e < hi; e++ {
					if e/S != g {
						t.Fatalf("%s %v: slice %d counts element %d of slice %d", c.op, c.shape, g, e, e/S)
					}
					owner[e]++
				}
			}
		}
		for e, k := range owner {
			if k != 1 {
				t.Fatalf("%s %v: element %d of a row counted %d times", c.op, c.shape, e, k)
			}
		}
	}
	t.Setenv(reduceSegsEnv, "never")
	p, err := NewReduceBackward(ReduceDesc{Op: ReduceVar, DType: dtype.BF16, Shape: []int{256, 2048, 7, 7}, Axes: []int{0, 2, 3}})
	if err != nil || p.multi.segsK != nil {
		t.Fatalf("never: %v, segs %v", err, p.multi.segsK != nil)
	}
}

// TestReduceAxesSegFlat: the ops without statistics take the packed walk
// (red_seg_flat, L.vec 2) where x is [R, C, S] with segments of at least
// a pack but no multiple of one, and the kernel's arithmetic (bc_div by S
// and by C, the split at the next segment) puts every element of every
// pack in its slice; the other plans keep the tiles' walks.
func TestReduceAxesSegFlat(t *testing.T) {
	for _, c := range []struct {
		op    ReduceOp
		dt    dtype.DType
		shape []int
		axes  []int
		flat  bool
	}{
		{ReduceSum, dtype.BF16, []int{256, 2048, 7, 7}, []int{0, 2, 3}, true},
		{ReduceMean, dtype.F32, []int{4, 6, 7, 7}, []int{0, 2, 3}, true},       // internal/conform: ReduceAxesCases
		{ReduceNorm2, dtype.F16, []int{4, 5, 10, 3}, []int{0, 2, 3}, true},     // S = 30
		{ReduceLogSumExp, dtype.F64, []int{2, 3, 5}, []int{0, 2}, true},        // S = 5, packs of 2
		{ReduceSum, dtype.BF16, []int{4, 6, 5}, []int{0, 2}, false},            // S = 5, under a pack of 8
		{ReduceSum, dtype.F32, []int{32, 256, 56, 56}, []int{0, 2, 3}, false},  // S a multiple of a pack
		{ReduceVar, dtype.BF16, []int{256, 2048, 7, 7}, []int{0, 2, 3}, false}, // statistics
		{ReduceSum, dtype.F32, []int{3, 5, 7}, []int{0, 2}, false},             // 105 elements: no whole packs
		{ReduceSum, dtype.F32, []int{4, 3, 5, 7}, []int{0, 2}, false},          // two kept groups
	} {
		p, err := NewReduceBackward(ReduceDesc{Op: c.op, DType: c.dt, Shape: c.shape, Axes: c.axes})
		if err != nil {
			t.Fatal(err)
		}
		if p.multi == nil || p.multi.inner != nil {
			t.Fatalf("%s %v %v: no seg plan", c.op, c.shape, c.axes)
		}
		x := Tensor{DType: c.dt, Shape: p.shape}
		k := Tensor{DType: c.dt, Shape: p.keep}
		dev := factsH100
		pl, err := p.segPolicy(&ReduceArgs{DY: k, X: x, Y: k, DX: x}, &dev)
		if err != nil {
			t.Fatal(err)
		}
		if got := pl.L.vec == 2; got != c.flat || (got && pl.n != 1) {
			t.Errorf("%s %s %v over %v: packed walk %v (%d launches), want %v", c.op, c.dt, c.shape, c.axes, got, pl.n, c.flat)
			continue
		}
		if !c.flat {
			continue
		}
		L := &pl.L
		n := int64(16 / c.dt.Size())
		S, C := L.kstride[1], L.sdim[0]
		if L.flat.packs*n != p.numel {
			t.Fatalf("%s %v: %d packs of %d for %d elements", c.op, c.shape, L.flat.packs, n, p.numel)
		}
		for q := int64(0); q < L.flat.packs; q++ {
			i0 := q * n
			s0 := bcDivModel(i0, L.flat.magic[1], L.flat.shift[1])
			c0 := s0 - bcDivModel(s0, L.flat.magic[0], L.flat.shift[0])*C
			c1 := (c0 + 1) % C
			split := s0*S + S - i0
			for e := int64(0); e < n; e++ {
				got := c0
				if e >= split {
					got = c1
				}
				if want := ((i0 + e) / S) % C; got != want {
					t.Fatalf("%s %v: element %d in slice %d, want %d", c.op, c.shape, i0+e, got, want)
				}
			}
		}
	}
}
