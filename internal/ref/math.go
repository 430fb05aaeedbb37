package ref

import "math"

// Log is the natural logarithm, accurate for a subnormal x too. Go's
// math.Log is not there on amd64 (golang/go#56600: it gives about -709 for
// every subnormal), so a subnormal is scaled by 2^54 into the normal range
// first: log(x) = log(x*2^54) - 54*ln 2.
func Log(x float64) float64 {
	if x > 0 && x < 0x1p-1022 {
		return math.Log(x*0x1p54) - 54*math.Ln2
	}
	return math.Log(x)
}

// Pow is x^y, accurate for a subnormal x too. math.Pow takes math.Log of x
// for the fraction of a non-integer y (other than ±1/2, which it takes as a
// square root), so for a subnormal x it uses x = m*2^-54 with m normal:
// x^y = m^y * 2^(-54y). An intermediate over- or underflows only where the
// result does (m < 1, and 2^(-54y) < 1 exactly when y > 0).
func Pow(x, y float64) float64 {
	if a := math.Abs(x); a > 0 && a < 0x1p-1022 && y != math.Trunc(y) && !math.IsInf(y, 0) {
		return math.Pow(x*0x1p54, y) * math.Pow(2, -54*y)
	}
	return math.Pow(x, y)
}
