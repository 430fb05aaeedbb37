package conform

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

// TestReduceAxesCasesReachBothPaths: the suite's cases make plans, some on
// the seg path and some on the single path, empty ones included, and a
// strided (OuterPadded) case on the single path.
func TestReduceAxesCasesReachBothPaths(t *testing.T) {
	for _, quick := range []bool{false, true} {
		cs := ReduceAxesCases(quick)
		paths, err := reduceAxesPaths(cs)
		if err != nil {
			t.Fatal(err)
		}
		if paths["seg"] == 0 || paths["single"] == 0 || !quick && paths["empty"] == 0 {
			t.Errorf("quick %v: paths %v", quick, paths)
		}
		strided := 0
		for _, c := range cs {
			if c.Layout(c.Shape).Strides != nil {
				strided++
			}
		}
		if strided == 0 {
			t.Errorf("quick %v: no strided case", quick)
		}
	}
}

// TestReduceAxesReferenceByTranspose checks ref.ReduceBackwardAxes on the
// suite's shapes against another reading of the same math: x permuted so
// that the reduced axes come last (in order), reduced along one axis by
// ref.ReduceBackward, and the gradient permuted back.
func TestReduceAxesReferenceByTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range ReduceAxesCases(false) {
		n := int(product(c.Shape))
		if n > 1<<16 {
			continue
		}
		axes := normAxes(c.Axes, len(c.Shape))
		sorted := slices.Sorted(slices.Values(axes))
		var perm []int // kept dims, then reduced dims, each ascending
		for d := range c.Shape {
			if !slices.Contains(sorted, d) {
				perm = append(perm, d)
			}
		}
		perm = append(perm, sorted...)
		for _, op := range ops.ReduceOps() {
			name := op.String()
			v := ref.NewAxesSlices(c.Shape, axes)
			if v.K == 0 {
				continue
			}
			x, y, dy := ReduceAxesData(rng, c, name, dtype.F64, v)
			got := ref.ReduceBackwardAxes(name, c.Shape, axes, dy, x, y, c.Correction)
			// Permuted: element i of the permuted array (row-major over
			// perm's dims) is x at the matching index.
			src := permIndex(c.Shape, perm)
			k := v.K
			slice, out := make([]float64, k), make([]float64, k)
			want := make([]float64, n)
			for s := 0; s < n/k; s++ {
				for j := 0; j < k; j++ {
					slice[j] = x[src[s*k+j]]
				}
				ref.ReduceBackward(name, dy[s], slice, y[s], c.Correction, out)
				for j := 0; j < k; j++ {
					want[src[s*k+j]] = out[j]
				}
			}
			for i := range want {
				if got[i] != want[i] && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
					t.Fatalf("%s %v: dx[%d] = %v, by transpose %v", name, c, i, got[i], want[i])
				}
			}
		}
	}
}

// permIndex maps each row-major index of shape permuted by perm to the
// row-major index of shape.
func permIndex(shape, perm []int) []int {
	n := int(product(shape))
	stride := make([]int, len(shape))
	s := 1
	for d := len(shape) - 1; d >= 0; d-- {
		stride[d] = s
		s *= shape[d]
	}
	out := make([]int, n)
	idx := make([]int, len(perm))
	for i := range out {
		src := 0
		for p, d := range perm {
			src += idx[p] * stride[d]
		}
		out[i] = src
		for p := len(perm) - 1; p >= 0; p-- {
			idx[p]++
			if idx[p] < shape[perm[p]] {
				break
			}
			idx[p] = 0
		}
	}
	return out
}
