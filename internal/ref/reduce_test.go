package ref

import (
	"math"
	"testing"
)

// TestReduceFiniteDifferences: every reduction backward against central
// differences of its forward (also run by TestChecks; kept by name so a
// failure points at the family).
func TestReduceFiniteDifferences(t *testing.T) {
	if err := checkReduceFD(); err != nil {
		t.Fatal(err)
	}
}

// TestReducePyTorchVectors: the pinned PyTorch 2.11 values of the
// reductions (docs/semantics.md, section 3).
func TestReducePyTorchVectors(t *testing.T) {
	if err := checkReduceEdges(); err != nil {
		t.Fatal(err)
	}
}

func sameSlice(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameFloat(a[i], b[i]) && !(a[i] == 0 && b[i] == 0) {
			return false
		}
	}
	return true
}

// TestReduceEdgeRules pins the structural rules of docs/semantics.md 3
// that the vectors do not reach.
func TestReduceEdgeRules(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name string
		op   string
		g    float64
		x    []float64
		y    float64 // NaN here means "use the forward"
		c    float64
		want []float64
	}{
		{"max three ties", "max", 3, []float64{1, 1, 1}, nan, 0, []float64{1, 1, 1}},
		{"max inf g off the max", "max", inf, []float64{1, 2}, nan, 0, []float64{nan, inf}},
		{"min unique", "min", 2, []float64{4, -1, 3}, nan, 0, []float64{0, 2, 0}},
		{"prod one zero", "prod", 2, []float64{0, 3, -2}, nan, 0, []float64{-12, 0, 0}},
		{"prod one zero NaN g", "prod", nan, []float64{0, 3}, nan, 0, []float64{nan, nan}},
		{"prod two zeros", "prod", 5, []float64{0, 3, 0}, nan, 0, []float64{0, 0, 0}},
		{"prod inf without zero", "prod", 1, []float64{inf, 2}, nan, 0, []float64{nan, inf}},
		{"prod single", "prod", 7, []float64{3}, nan, 0, []float64{7}},
		// PyTorch masks x/y, not the product: g*0 stays NaN (docs/semantics.md 3, norm2).
		{"norm2 zero NaN g", "norm2", nan, []float64{0, 0}, nan, 0, []float64{nan, nan}},
		{"norm2 zero inf g", "norm2", inf, []float64{0, 0}, nan, 0, []float64{nan, nan}},
		{"norm2 zero finite g", "norm2", 3, []float64{0, 0}, nan, 0, []float64{0, 0}},
		{"norm2 inf element", "norm2", 1, []float64{inf, 1}, nan, 0, []float64{nan, 0}},
		{"logsumexp NaN", "logsumexp", 1, []float64{nan, 1}, nan, 0, []float64{nan, nan}},
		{"mean", "mean", 4, []float64{1, 2, 3, 4}, nan, 0, []float64{1, 1, 1, 1}},
		{"sum", "sum", -2, []float64{9, 9}, nan, 0, []float64{-2, -2}},
		// var with N - c <= 0 (dim given): no special case.
		{"var N == c", "var", 1, []float64{1, 3}, 0, 2, []float64{-inf, inf}},
		{"var N == c at the mean", "var", 1, []float64{2, 2}, 0, 2, []float64{nan, nan}},
		{"var N < c", "var", 1, []float64{1, 3}, 0, 4, []float64{1, -1}},
		{"var c = 0", "var", 1, []float64{1, 3}, nan, 0, []float64{-1, 1}},
		{"var fractional c", "var", 1, []float64{1, 3}, nan, 0.5, []float64{-2.0 / 1.5, 2.0 / 1.5}},
		// std: y == 0 selects 0 even for NaN g; N == c gives y = inf in the
		// forward (m2 > 0), so g/(2y) = 0 and inf*0 = NaN; N < c gives 0.
		{"std zero NaN g", "std", nan, []float64{4, 4}, nan, 1, []float64{0, 0}},
		{"std N == c", "std", 1, []float64{1, 3}, nan, 2, []float64{nan, nan}},
		{"std N < c", "std", 1, []float64{1, 3}, nan, 3, []float64{0, 0}},
	}
	for _, c := range cases {
		y := c.y
		if math.IsNaN(y) {
			y = ReduceForward(c.op, c.x, c.c)
		}
		dx := make([]float64, len(c.x))
		ReduceBackward(c.op, c.g, c.x, y, c.c, dx)
		if !sameSlice(dx, c.want) {
			t.Errorf("%s: %s(g=%v, x=%v, y=%v, c=%v) = %v, want %v", c.name, c.op, c.g, c.x, y, c.c, dx, c.want)
		}
	}
}

// TestReduceForward pins the forward's own edge rules (PyTorch's).
func TestReduceForward(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		op   string
		x    []float64
		c    float64
		want float64
	}{
		{"max", []float64{1, nan, 3}, 0, nan},
		{"min", []float64{2, -1, 3}, 0, -1},
		{"logsumexp", []float64{-inf, -inf}, 0, -inf},
		{"logsumexp", []float64{inf, 1}, 0, inf},
		{"logsumexp", []float64{0, 0}, 0, math.Ln2},
		{"var", []float64{5}, 1, nan},
		{"var", []float64{1, 3}, 2, inf},
		{"std", []float64{1, 2, 3}, 1, 1},
		{"norm2", []float64{3, 4}, 0, 5},
		{"prod", []float64{2, 0, 3}, 0, 0},
	}
	for _, c := range cases {
		if got := ReduceForward(c.op, c.x, c.c); !sameFloat(got, c.want) {
			t.Errorf("%s(%v, c=%v) = %v, want %v", c.op, c.x, c.c, got, c.want)
		}
	}
}

// TestReduceCheckCanFail: the finite-difference comparison notices a wrong
// mean factor.
func TestReduceCheckCanFail(t *testing.T) {
	x := []float64{1, 2, 3}
	dx := make([]float64, 3)
	ReduceBackward("mean", 1, x, 0, 0, dx)
	fd := centralDiff(func(v float64) float64 { return ReduceForward("mean", []float64{v, 2, 3}, 0) }, 1)
	if !closeRel(dx[0], fd, 1e-6) || closeRel(dx[0]*1.01, fd, 1e-6) {
		t.Fatalf("finite difference %v vs backward %v: the comparison cannot tell a wrong gradient", fd, dx[0])
	}
}
