package ref

import (
	"fmt"
	"math"
)

// BinaryOps lists the binary ops by kernel name.
var BinaryOps = []string{"add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2", "hypot", "lerp"}

// BinaryForward returns y = op(a, b). s is alpha for add and sub and the
// weight for lerp; other ops ignore it.
func BinaryForward(op string, a, b, s float64) float64 {
	switch op {
	case "add":
		return a + s*b
	case "sub":
		return a - s*b
	case "mul":
		return a * b
	case "div":
		return a / b
	case "maximum":
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN()
		}
		return math.Max(a, b)
	case "minimum":
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.NaN()
		}
		return math.Min(a, b)
	case "pow":
		return Pow(a, b)
	case "atan2":
		return math.Atan2(a, b)
	case "hypot":
		return math.Hypot(a, b)
	case "lerp":
		if math.Abs(s) < 0.5 {
			return a + s*(b-a)
		}
		return b - (b-a)*(1-s)
	}
	panic(fmt.Sprintf("ref: unknown binary op %q", op))
}

// BinaryBackward returns (da, db) for upstream gradient g, with PyTorch's
// formulas and edge cases (the same as gen/binary.cuh, in float64).
func BinaryBackward(op string, g, a, b, s float64) (da, db float64) {
	switch op {
	case "add":
		return g, g * s
	case "sub":
		return g, -g * s
	case "mul":
		return g * b, g * a
	case "div":
		return g / b, -g * ((a / b) / b)
	case "maximum", "minimum":
		w := g
		if a == b {
			w = g * 0.5
		}
		da, db = w, w
		lessA, lessB := a < b, a > b // a loses max when a < b
		if op == "minimum" {
			lessA, lessB = a > b, a < b
		}
		if lessA {
			da = 0
		}
		if lessB {
			db = 0
		}
		return da, db
	case "pow":
		if b != 0 {
			da = g * (b * Pow(a, b-1))
		}
		f := 0.0
		if !(a == 0 && b >= 0) {
			f = Pow(a, b) * Log(a)
		}
		return da, g * f
	case "atan2":
		den := a*a + b*b
		r := 0.0
		if den != 0 {
			r = 1 / den
		}
		return (g * b) * r, (g * -a) * r
	case "hypot":
		y := math.Hypot(a, b)
		return (g * a) / y, (g * b) / y
	case "lerp":
		return g * (1 - s), g * s
	}
	panic(fmt.Sprintf("ref: unknown binary op %q", op))
}

// BinaryNeedsSaved reports whether the op's backward reads a and b.
func BinaryNeedsSaved(op string) bool {
	return op != "add" && op != "sub" && op != "lerp"
}
