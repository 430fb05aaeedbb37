package ref

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Check is one self-check of the reference: its backward against central
// finite differences of its forward, or against pinned PyTorch values.
type Check struct {
	Name string
	Run  func() error
}

// checks is every self-check, in family order; each family file adds its own.
var checks []Check

// Checks returns the reference's self-checks. The unit tests and the
// CPU part of `baracuda selftest` both run them.
func Checks() []Check { return checks }

// centralDiff is (f(x+h) - f(x-h)) / 2h with a step scaled to x.
func centralDiff(f func(float64) float64, x float64) float64 {
	h := 1e-6 * math.Max(1, math.Abs(x))
	return (f(x+h) - f(x-h)) / (2 * h)
}

func closeRel(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

// sameFloat compares exactly, NaN equal to NaN, the sign of zero significant.
func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return a == b && math.Signbit(a) == math.Signbit(b)
}

func init() {
	checks = append(checks,
		Check{"binary finite differences", checkBinaryFD},
		Check{"binary PyTorch edge cases", checkBinaryEdges})
}

// checkBinaryFD compares every binary backward with central differences of
// the forward at random points away from kinks.
func checkBinaryFD() error {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, op := range BinaryOps {
		for i := 0; i < 2000; i++ {
			a := rng.Float64()*4 - 2
			b := rng.Float64()*4 - 2
			s := rng.Float64()*2 - 0.5
			g := rng.Float64()*2 - 1
			switch op {
			case "pow", "div":
				a, b = math.Abs(a)+0.1, math.Abs(b)+0.1
			case "maximum", "minimum":
				if math.Abs(a-b) < 1e-3 {
					continue
				}
			}
			da, db := BinaryBackward(op, g, a, b, s)
			fa := centralDiff(func(x float64) float64 { return BinaryForward(op, x, b, s) }, a)
			fb := centralDiff(func(x float64) float64 { return BinaryForward(op, a, x, s) }, b)
			if !closeRel(da, g*fa, 1e-6) || !closeRel(db, g*fb, 1e-6) {
				return fmt.Errorf("%s(a=%v, b=%v, s=%v) g=%v: backward (%v, %v), finite differences (%v, %v)",
					op, a, b, s, g, da, db, g*fa, g*fb)
			}
		}
	}
	return nil
}

// checkBinaryEdges pins the observed PyTorch 2.11 values of the binary
// ops' edge cases (docs/semantics.md 2: ties, NaN, pow masks, atan2/hypot
// at the origin).
func checkBinaryEdges() error {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		op             string
		g, a, b, s     float64
		wantDA, wantDB float64
	}{
		{"maximum", 1, 1, 1, 0, 0.5, 0.5},
		{"maximum", 1, 2, 1, 0, 1, 0},
		{"maximum", 1, nan, 1, 0, 1, 1},
		{"maximum", 1, 1, nan, 0, 1, 1},
		{"minimum", 1, 2, 1, 0, 0, 1},
		{"minimum", 1, 1, 1, 0, 0.5, 0.5},
		{"minimum", 1, nan, 3, 0, 1, 1},
		{"pow", 1, 0, 0, 0, 0, 0},
		{"pow", 1, 0, -1, 0, -inf, -inf},
		{"pow", 1, -2, 2, 0, -4, nan},
		{"pow", 1, 0, 0.5, 0, inf, 0},
		{"pow", nan, 3, 0, 0, 0, nan},
		{"atan2", 1, 0, 0, 0, 0, math.Copysign(0, -1)},
		{"hypot", 1, 0, 0, 0, nan, nan},
		{"add", 2, 5, 7, 0.5, 2, 1},
		{"sub", 2, 5, 7, 0.5, 2, -1},
		{"lerp", 2, 5, 7, 0.25, 1.5, 0.5},
		{"div", 1, 0, 0, 0, inf, nan},
	}
	for _, c := range cases {
		da, db := BinaryBackward(c.op, c.g, c.a, c.b, c.s)
		if !sameFloat(da, c.wantDA) || !sameFloat(db, c.wantDB) {
			return fmt.Errorf("%s(g=%v, a=%v, b=%v, s=%v) = (%v, %v), want (%v, %v)", c.op, c.g, c.a, c.b, c.s, da, db, c.wantDA, c.wantDB)
		}
	}
	return nil
}
