package main

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

// TestShapesCases: 588 cases (14 ops, 2 dtypes, 7 layouts, 3 data
// kinds), names unique, and every name parses back to the case's op,
// dtype, layout of 2^24 elements and data kind.
func TestShapesCases(t *testing.T) {
	cs := shapesCases()
	want := (len(ops.ReduceOps()) + len(ops.ScanOps())) * 2 * len(shapesLayouts) * len(shapesData)
	if len(cs) != 588 || want != 588 {
		t.Fatalf("%d shapes cases (ops x dtypes x layouts x data = %d), want 588", len(cs), want)
	}
	familyOps := map[string][]string{}
	for _, op := range ops.ReduceOps() {
		familyOps["reduce"] = append(familyOps["reduce"], op.String())
	}
	for _, op := range ops.ScanOps() {
		familyOps["scan"] = append(familyOps["scan"], op.String())
	}
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.name] {
			t.Errorf("%s twice", c.name)
		}
		seen[c.name] = true
		p := strings.Split(c.name, "/")
		if len(p) != 7 || p[0] != "shapes" {
			t.Errorf("%s: not shapes/<family>/<op>/<dtype>/<shape>/axis<a>/<data>", c.name)
			continue
		}
		if !slices.Contains(familyOps[p[1]], p[2]) || p[2] != c.op {
			t.Errorf("%s: op %q of family %q (case op %q)", c.name, p[2], p[1], c.op)
		}
		if dt, err := dtype.Parse(p[3]); err != nil || dt != c.dt || (dt != dtype.F32 && dt != dtype.BF16) {
			t.Errorf("%s: dtype %q (case %s, %v)", c.name, p[3], c.dt, err)
		}
		n, rank := 1, 0
		for _, d := range strings.Split(p[4], "x") {
			v, err := strconv.Atoi(d)
			if err != nil || v < 1 {
				t.Errorf("%s: shape %q", c.name, p[4])
			}
			n *= v
			rank++
		}
		if n != 1<<24 || rank > 2 {
			t.Errorf("%s: %d elements in %d dims, want 2^24 in 1 or 2", c.name, n, rank)
		}
		a, err := strconv.Atoi(strings.TrimPrefix(p[5], "axis"))
		if !strings.HasPrefix(p[5], "axis") || err != nil || a < 0 || a >= rank {
			t.Errorf("%s: axis %q", c.name, p[5])
		}
		if !slices.Contains(shapesData, p[6]) || p[6] != c.data {
			t.Errorf("%s: data %q (case %q)", c.name, p[6], c.data)
		}
		if c.elems < 1<<24 || c.setup == nil {
			t.Errorf("%s: elems %d, setup %v", c.name, c.elems, c.setup != nil)
		}
	}
}

// TestShapesCommandLine: -shapes -list lists the set through -filter, and
// -shapes is a run of its own, like -sweep and -coldstart.
func TestShapesCommandLine(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"bench", "-shapes", "-list", "-filter", "reduce/max/f32/4x4194304/axis1/"}, &out, &errOut); code != 0 {
		t.Fatalf("bench -shapes -list: exit %d: %s", code, errOut.String())
	}
	got := strings.Fields(out.String())
	want := []string{"shapes/reduce/max/f32/4x4194304/axis1/normal", "shapes/reduce/max/f32/4x4194304/axis1/grid",
		"shapes/reduce/max/f32/4x4194304/axis1/clamp"}
	if !slices.Equal(got, want) {
		t.Errorf("bench -shapes -list -filter: %q, want %q", got, want)
	}
	out.Reset()
	if code := run([]string{"bench", "-shapes", "-list"}, &out, &errOut); code != 0 || strings.Count(out.String(), "\n") != 588 {
		t.Errorf("bench -shapes -list: exit %d, %d lines, want 588", code, strings.Count(out.String(), "\n"))
	}
	for _, other := range []string{"-sweep", "-coldstart"} {
		out.Reset()
		errOut.Reset()
		code := run([]string{"bench", "-shapes", other, "-list"}, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), "two different runs") {
			t.Errorf("bench -shapes %s: exit %d, want 2 with a usage error: %s", other, code, errOut.String())
		}
	}
}

// TestShapesClamp: clamp data leaves at least 10% of every slice equal to
// its max (bf16 values, with ties of their own, as well as f32), changes
// no element below the slice's 90th percentile, and the products' clamp
// zeroes exactly positions j%10 == 3 of every slice.
func TestShapesClamp(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, l := range []shapesLayout{
		{[]int{1000}, 0}, {[]int{4, 1000}, 0}, {[]int{4, 1000}, 1}, {[]int{1000, 4}, 0}, {[]int{1000, 4}, 1},
		{[]int{37, 53}, 0}, {[]int{37, 53}, 1}, {[]int{4096, 3}, 0}, {[]int{3, 130}, 0}, {[]int{9, 2}, 1},
	} {
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			v := ref.NewAxisSlices(l.shape, l.axis)
			vals := make([]float64, v.Count()*v.K)
			for i := range vals {
				vals[i] = dtype.Round(dt, rng.NormFloat64())
			}
			out := make([]float64, len(vals))
			clampSlices(vals, out, l.shape, l.axis)
			in, got := make([]float64, v.K), make([]float64, v.K)
			for s := range v.Count() {
				v.Gather(vals, s, in)
				v.Gather(out, s, got)
				top := ref.ReduceForward("max", got, 0)
				ties := 0
				for j, x := range got {
					if x == top {
						ties++
					}
					if x != in[j] && x != top {
						t.Fatalf("%v axis %d %s slice %d: element %d %g became %g, not the max %g", l.shape, l.axis, dt, s, j, in[j], x, top)
					}
				}
				if 10*ties < v.K {
					t.Errorf("%v axis %d %s slice %d: %d of %d elements equal the max", l.shape, l.axis, dt, s, ties, v.K)
				}
			}
			zeroSlices(vals, out, l.shape, l.axis)
			for s := range v.Count() {
				v.Gather(vals, s, in)
				v.Gather(out, s, got)
				for j := range got {
					if want := map[bool]float64{true: 0, false: in[j]}[j%10 == 3]; got[j] != want {
						t.Fatalf("%v axis %d zeroSlices slice %d element %d: %g, want %g", l.shape, l.axis, s, j, got[j], want)
					}
				}
			}
		}
	}
}

// TestForSlices: every slice reaches f once with its own elements, and
// what f writes lands in that slice of out, over contiguous slices and
// strided ones (tiles of up to 64 slices, the last one partial).
func TestForSlices(t *testing.T) {
	for _, l := range []shapesLayout{
		{[]int{100}, 0}, {[]int{5, 7}, 0}, {[]int{5, 7}, 1}, {[]int{3, 7, 130}, 1}, {[]int{2, 70000, 3}, 1}, {[]int{4, 200}, 0},
	} {
		v := ref.NewAxisSlices(l.shape, l.axis)
		vals := make([]float64, v.Count()*v.K)
		for i := range vals {
			vals[i] = float64(i)
		}
		out := make([]float64, len(vals))
		calls := make([]int, v.Count())
		forSlices(vals, out, l.shape, l.axis, func(s int, in, o []float64) {
			calls[s]++
			want := make([]float64, v.K)
			v.Gather(vals, s, want)
			if !slices.Equal(in, want) {
				t.Errorf("%v axis %d slice %d: in %v, want %v", l.shape, l.axis, s, in[:min(4, len(in))], want[:min(4, len(want))])
			}
			for j, x := range in {
				o[j] = -x
			}
		})
		for s, n := range calls {
			if n != 1 {
				t.Errorf("%v axis %d: slice %d seen %d times", l.shape, l.axis, s, n)
			}
		}
		for i, x := range out {
			if x != -vals[i] {
				t.Fatalf("%v axis %d: out[%d] = %g, want %g", l.shape, l.axis, i, x, -vals[i])
			}
		}
	}
}

// TestSelectKth: the value a sort puts at index k, on distinct values and
// on values with many ties.
func TestSelectKth(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 5, 16, 17, 100, 1000, 4097} {
		for _, levels := range []int{0, 3} {
			a := make([]float64, n)
			for i := range a {
				a[i] = rng.NormFloat64()
				if levels > 0 {
					a[i] = float64(rng.IntN(levels))
				}
			}
			sorted := slices.Sorted(slices.Values(a))
			for _, k := range []int{0, n / 2, 9 * (n - 1) / 10, n - 1} {
				b := slices.Clone(a)
				if got := selectKth(b, k); got != sorted[k] {
					t.Errorf("n %d levels %d k %d: %g, want %g", n, levels, k, got, sorted[k])
				}
			}
		}
	}
}

// TestLogcumsumexpTo: the fast forward matches ref.ScanForward to within
// float64 rounding, and leaves non-finite input to ref.
func TestLogcumsumexpTo(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 10, 1000, 100000} {
		for _, scale := range []float64{1, 30} {
			x := make([]float64, n)
			for i := range x {
				x[i] = scale * rng.NormFloat64()
			}
			if n == 1000 {
				slices.Sort(x) // every element a new max
			}
			y := make([]float64, n)
			if !logcumsumexpTo(x, y) {
				t.Fatalf("n %d: finite input refused", n)
			}
			want := ref.ScanForward("logcumsumexp", x, false)
			for k := range y {
				if math.Abs(y[k]-want[k]) > 1e-12*math.Max(1, math.Abs(want[k])) {
					t.Fatalf("n %d scale %g: y[%d] = %.17g, ref %.17g", n, scale, k, y[k], want[k])
				}
			}
		}
	}
	if logcumsumexpTo([]float64{0, math.Inf(1)}, make([]float64, 2)) {
		t.Error("an infinity is not left to ref")
	}
}
