package ops

import (
	"math/bits"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
)

func TestReduceShortGeometry(t *testing.T) {
	cases := []struct {
		shape []int
		axis  int
		size  int
		mode  string
		form  int
		packs int64
		ip    int64
	}{
		{[]int{4, 4194304}, 0, 4, "", redShortOuter, 4194304 / 4, 4194304 / 4},
		{[]int{4, 4194304}, 0, 2, "", redShortOuter, 4194304 / 4, 4194304 / 4},
		{[]int{4194304, 4}, 1, 4, "", redShortPacked, 0, 0},
		{[]int{4194304, 4}, 1, 2, "", redShortPacked, 0, 0},
		{[]int{4194304, 4}, 1, 4, "staged", redShortInner, 0, 0},
		{[]int{4194304, 4}, 1, 2, "staged", redShortInner, 0, 0},
		{[]int{65536, 5}, 1, 2, "", redShortInner, 0, 0}, // k = 5: the staged form
		{[]int{65536, 15}, 1, 4, "", redShortInner, 0, 0},
		{[]int{4194304, 4}, 0, 4, "", redShortNone, 0, 0}, // k = 2^22
		{[]int{65536, 16}, 1, 8, "", redShortInner, 0, 0},
		{[]int{65536, 17}, 1, 4, "", redShortNone, 0, 0}, // k > 16
		{[]int{65535, 16}, 1, 4, "", redShortNone, 0, 0}, // too few slices
		{[]int{65535, 16}, 1, 4, "always", redShortPacked, 0, 0},
		{[]int{65535, 16}, 1, 4, "staged-always", redShortInner, 0, 0},
		{[]int{65535, 16}, 1, 4, "staged", redShortNone, 0, 0},
		{[]int{65536, 16}, 1, 4, "never", redShortNone, 0, 0},
		{[]int{4, 4194302}, 0, 4, "", redShortNone, 0, 0}, // I not a multiple of 4
		{[]int{4, 4194300}, 0, 4, "", redShortOuter, 4194300 / 4, 4194300 / 4},
		{[]int{4, 4194302}, 0, 2, "", redShortNone, 0, 0}, // nor of 4 (16-bit: 8-byte vectors)
		{[]int{4, 4194300}, 0, 2, "", redShortOuter, 4194300 / 4, 4194300 / 4},
		{[]int{3, 5, 65536}, 1, 8, "", redShortOuter, 3 * 65536 / 2, 65536 / 2},
		{[]int{3, 5, 6}, 1, 8, "always", redShortOuter, 9, 3},
		{[]int{3, 5, 6}, 1, 2, "always", redShortNone, 0, 0},
		{[]int{1, 65536, 1, 16, 1}, 3, 4, "", redShortPacked, 0, 0},
		{[]int{1, 65536, 1, 16, 1}, 3, 8, "", redShortInner, 0, 0},
		{[]int{7, 1, 3}, 2, 4, "always", redShortPacked, 0, 0},
		{[]int{7, 1, 3}, 2, 4, "", redShortNone, 0, 0},
		{[]int{1000, 1}, 1, 4, "always", redShortPacked, 0, 0}, // k = 1
		{[]int{1000, 1}, 1, 8, "always", redShortInner, 0, 0},
		{[]int{0, 4}, 1, 4, "always", redShortNone, 0, 0}, // empty
		{[]int{4, 0}, 1, 4, "always", redShortNone, 0, 0},
		{[]int{3, 7, 64}, 1, 2, "always", redShortOuter, 3 * 64 / 4, 64 / 4},
	}
	for _, c := range cases {
		g := shortGeometry(c.shape, c.axis, c.size, c.mode)
		if g.form != c.form || g.packs != c.packs || g.ip != c.ip {
			t.Errorf("%v axis %d size %d %q: form %d packs %d ip %d, want %d %d %d", c.shape, c.axis, c.size, c.mode,
				g.form, g.packs, g.ip, c.form, c.packs, c.ip)
		}
	}
}

// bcDivModel is bc_div (gen/common.cuh).
func bcDivModel(n int64, magic uint64, shift int32) int64 {
	u := uint64(n)
	if magic != 0 {
		u, _ = bits.Mul64(u, magic)
	}
	return int64(u >> shift)
}

// TestReduceShortOuterModel walks red_short_outer's index math for every
// pack and checks that the packs' rows cover each element of x and dx
// once, and that each element's slice (its dy and y index) is the one the
// shape gives it: x[o, j, i] belongs to dy[o, i].
func TestReduceShortOuterModel(t *testing.T) {
	for _, c := range []struct {
		shape []int
		axis  int
		size  int
	}{{[]int{4, 64}, 0, 4}, {[]int{3, 5, 24}, 1, 4}, {[]int{3, 16, 16}, 1, 2}, {[]int{2, 1, 7, 6}, 2, 8}, {[]int{5, 2, 3, 12}, 1, 2}} {
		g := shortGeometry(c.shape, c.axis, c.size, "always")
		if g.form != redShortOuter {
			t.Fatalf("%v: form %d", c.shape, g.form)
		}
		n := shortVec(c.size)
		k, inner := int64(c.shape[c.axis]), numel(c.shape[c.axis+1:])
		seen := make([]int, numel(c.shape))
		for p := int64(0); p < g.packs; p++ {
			o := bcDivModel(p, g.magic, g.shift)
			q := (p - o*g.ip) * n
			rs := g.ip * n
			base, so := o*k*rs+q, o*rs+q
			if base%n != 0 || so%n != 0 {
				t.Fatalf("%v: pack %d at %d (slices %d) off a pack boundary", c.shape, p, base, so)
			}
			for j := int64(0); j < k; j++ {
				for e := int64(0); e < n; e++ {
					at := base + j*rs + e
					seen[at]++
					// The element's own coordinates: at = (oo*k + jj)*inner + ii.
					ii, jj, oo := at%inner, at/inner%k, at/inner/k
					if jj != j || oo*inner+ii != so+e {
						t.Fatalf("%v: pack %d row %d elem %d at %d: slice %d, want %d", c.shape, p, j, e, at, so+e, oo*inner+ii)
					}
				}
			}
		}
		for i, v := range seen {
			if v != 1 {
				t.Fatalf("%v: element %d written %d times", c.shape, i, v)
			}
		}
	}
}

// TestReduceShortChunk checks the inner form's chunks: whole slices, at
// least one per thread, within the staged buffer, and a multiple of 16
// bytes, so that every chunk of a 16-byte aligned x starts aligned.
func TestReduceShortChunk(t *testing.T) {
	for _, size := range []int{2, 4, 8} {
		capElems := max(16384, redBlock*redShortMaxK*int64(size)) / int64(size)
		for k := int64(1); k <= redShortMaxK; k++ {
			cs := shortChunk(k, size)
			if cs < redBlock || cs%redBlock != 0 || cs*k > capElems || cs*k*int64(size)%16 != 0 || (cs+redBlock)*k <= capElems {
				t.Errorf("size %d k %d: chunk of %d slices (%d elements of %d)", size, k, cs, cs*k, capElems)
			}
		}
	}
}

// redShortPadModel is red_short_pad (gen/reduce_short.cuh).
func redShortPadModel(i, size int) int {
	w, pw := 128/size, 1
	if size < 4 {
		pw = 4 / size
	}
	return i + i/w*pw
}

// TestReduceShortPad checks red_short_pad's layout of the inner form's
// chunk: distinct elements keep distinct places within the static buffer
// (RED_BLOCK*16 elements and their padding), and for k a power of two the
// 32 lanes of a warp reading position j of their slices touch distinct
// banks (the 16-byte elements' halves of a warp for f64; 16-bit elements
// sharing a word count once).
func TestReduceShortPad(t *testing.T) {
	for _, size := range []int{2, 4, 8} {
		cap := int(max(16384, redBlock*redShortMaxK*int64(size)) / int64(size))
		bufLen := cap + cap/(128/size)*max(1, 4/size)
		used := map[int]bool{}
		for i := 0; i < cap; i++ {
			a := redShortPadModel(i, size)
			if a >= bufLen || used[a] {
				t.Fatalf("size %d: element %d at %d (buffer %d, reused %v)", size, i, a, bufLen, used[a])
			}
			used[a] = true
		}
		for _, k := range []int{1, 2, 4, 8, 16} {
			lanes := 32
			if size == 8 {
				lanes = 16
			}
			for j := 0; j < k; j++ {
				banks := map[int]int{} // bank -> word
				for l := 0; l < lanes; l++ {
					word := redShortPadModel(l*k+j, size) * size / 4
					b := word % 32
					if w, ok := banks[b]; ok && w != word && size != 8 {
						t.Errorf("size %d k %d j %d: lanes conflict on bank %d", size, k, j, b)
					}
					banks[b] = word
				}
				if size == 8 && len(banks) < lanes {
					t.Errorf("size 8 k %d j %d: %d banks for %d lanes", k, j, len(banks), lanes)
				}
			}
		}
	}
}

func TestReduceShortPolicy(t *testing.T) {
	for _, op := range ReduceOps() {
		for _, dt := range dtype.All {
			for _, c := range []struct {
				shape []int
				axis  int
				env   string
				short bool
			}{
				{[]int{4, 4194304}, 0, "", shortPays(op, dt.Size(), redShortOuter)},
				{[]int{4194304, 4}, 1, "", dt.Size() != 8},
				{[]int{4194304, 4}, -1, "", dt.Size() != 8},
				{[]int{4194304, 4}, 1, "staged", dt.Size() == 2},
				{[]int{4194304, 4}, 1, "always", true},
				{[]int{4194304, 4}, 1, "never", false},
				{[]int{4096, 4096}, 0, "", false},
				{[]int{4096, 4096}, 1, "", false},
				{[]int{4194304, 4}, 0, "", false},
				{[]int{100, 4}, 1, "", false},
				{[]int{100, 4}, 1, "always", true},
				{[]int{8, 1000}, 0, "always", true},
				{[]int{8, 1001}, 0, "always", false},
			} {
				t.Setenv(reduceShortEnv, c.env)
				p, err := NewReduceBackward(ReduceDesc{Op: op, DType: dt, Shape: c.shape, Axis: c.axis, Correction: 1})
				if err != nil {
					t.Fatal(err)
				}
				name := p.Kernel().Name
				if got := strings.HasSuffix(name, "_short") || strings.HasSuffix(name, "_inner"); got != c.short || (p.shortK != nil) != c.short {
					t.Errorf("%s %s %v axis %d %q: kernel %s, want short %v", op, dt, c.shape, c.axis, c.env, name, c.short)
				}
				if c.short && !strings.HasPrefix(name, "reduce_bw_"+op.String()+"_"+dt.Suffix()+"_") {
					t.Errorf("%s %s: kernel %s", op, dt, name)
				}
			}
		}
	}
	t.Setenv(reduceShortEnv, "")
	// A plan over several axes whose reduced dims coalesce into one group
	// takes it on its coalesced view.
	p, err := NewReduceBackward(ReduceDesc{Op: ReduceMax, DType: dtype.F32, Shape: []int{2, 4, 65536}, Axes: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if name := p.Kernel().Name; name != "reduce_bw_max_f32_short" {
		t.Errorf("axes {0, 1} of [2 4 65536]: kernel %s", name)
	}
}

// TestReduceShortDense checks which operands Run gives the short kernel.
func TestReduceShortDense(t *testing.T) {
	shape := []int{65536, 4}
	for _, op := range []ReduceOp{ReduceSum, ReduceProd} {
		p, err := NewReduceBackward(ReduceDesc{Op: op, DType: dtype.F32, Shape: shape, Axis: 1})
		if err != nil {
			t.Fatal(err)
		}
		args := func() *ReduceArgs {
			return &ReduceArgs{DY: redTensor(dtype.F32, 65536, 1), X: redTensor(dtype.F32, shape...),
				Y: redTensor(dtype.F32, 65536), DX: redTensor(dtype.F32, shape...)}
		}
		if a := args(); !p.shortDense(a) {
			t.Errorf("%s: contiguous operands refused", op)
		}
		a := args()
		a.DX.Buf.Addr += 4
		if p.shortDense(a) {
			t.Errorf("%s: dx off 16 bytes taken", op)
		}
		a = args()
		a.X.Buf.Addr += 4
		if p.shortDense(a) != (op == ReduceSum) {
			t.Errorf("%s: x off 16 bytes: %v", op, p.shortDense(a))
		}
		a = args()
		a.DY.Buf.Addr += 4 // dy and y need no alignment
		if !p.shortDense(a) {
			t.Errorf("%s: dy off 16 bytes refused", op)
		}
		a = args()
		a.X.Strides = []int{1, 65536}
		if p.shortDense(a) != (op == ReduceSum) {
			t.Errorf("%s: transposed x: %v", op, p.shortDense(a))
		}
		a = args()
		a.DY.Strides = []int{2, 1}
		if p.shortDense(a) {
			t.Errorf("%s: strided dy taken", op)
		}
	}
}

// TestReduceShortPays: by default the packed inner form is taken for
// every op, the staged inner form for the 16-bit dtypes only, the outer
// form for every op but the 16-bit sum, mean and norm2; the knob's
// "always" takes them whatever the op.
func TestReduceShortPays(t *testing.T) {
	for _, op := range ReduceOps() {
		for _, size := range []int{2, 4, 8} {
			if !shortPays(op, size, redShortPacked) {
				t.Errorf("%s size %d packed: false", op, size)
			}
			if got := shortPays(op, size, redShortInner); got != (size == 2) {
				t.Errorf("%s size %d inner: %v", op, size, got)
			}
			noX := op == ReduceSum || op == ReduceMean || op == ReduceNorm2
			if got := shortPays(op, size, redShortOuter); got != (size != 2 || !noX) {
				t.Errorf("%s size %d outer: %v", op, size, got)
			}
		}
	}
	t.Setenv(reduceShortEnv, "staged")
	p, err := NewReduceBackward(ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{1 << 20, 4}, Axis: 1})
	if err != nil {
		t.Fatal(err)
	}
	if p.shortK != nil {
		t.Errorf("sum f32 [2^20, 4] axis 1 takes the short kernel under staged")
	}
	t.Setenv(reduceShortEnv, "")
	if p, err = NewReduceBackward(ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{1 << 20, 4}, Axis: 1}); err != nil {
		t.Fatal(err)
	}
	if p.short.form != redShortPacked {
		t.Errorf("sum f32 [2^20, 4] axis 1 misses the packed inner form by default")
	}
	t.Setenv(reduceShortEnv, "always")
	if p, err = NewReduceBackward(ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{1 << 20, 4}, Axis: 1}); err != nil {
		t.Fatal(err)
	}
	if p.shortK == nil {
		t.Errorf("sum f32 [2^20, 4] axis 1 misses the short kernel under always")
	}
}
