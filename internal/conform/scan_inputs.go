package conform

// The inputs of the scan checks: each ScanValues kind's dy and x, slice by
// slice, in the case's dtype.

import (
	"math"
	"math/rand/v2"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// scanInputs fills dy and x (logical, rounded to dt) slice by slice; scan
// position p of a slice is element k = p, or n-1-p with reverse.
func scanInputs(rng *rand.Rand, op ops.ScanOp, dt dtype.DType, v ScanValues, slices [][]int, reverse bool, dy, x []float64) {
	if v == ScanExact && op == ops.ScanLogcumsumexp {
		v = ScanNormal
	}
	if v == ScanNonFinite {
		if op == ops.ScanCumprod || op == ops.ScanLogcumsumexp {
			scanNonFinite(rng, op, dt, slices, reverse, dy, x)
			return
		}
		v = ScanSpecial
	}
	if v == ScanSaturated && op != ops.ScanCummax && op != ops.ScanCummin {
		v = ScanExact
		if op == ops.ScanLogcumsumexp {
			v = ScanNormal
		}
	}
	if v == ScanUnderflow {
		if op == ops.ScanCumprod {
			scanUnderflow(rng, dt, slices, reverse, dy, x)
			return
		}
		v = ScanNormal
	}
	for _, idx := range slices {
		n := len(idx)
		at := func(p int) int { return scanIndex(idx, reverse, p) }
		// Zero positions of cumprod: none, the start, the middle, the end, or two.
		z1, z2 := -1, -1
		switch rng.IntN(5) {
		case 1:
			z1 = 0
		case 2:
			z1 = n / 2
		case 3:
			z1 = n - 1
		case 4:
			z1, z2 = n/3, n-1-rng.IntN(1+n/3)
		}
		lead := 0 // leading -inf run of logcumsumexp
		if v == ScanSpecial && rng.IntN(3) == 0 {
			lead = 1 + rng.IntN(3)
		}
		for p := 0; p < n; p++ {
			k := at(p)
			g := rng.NormFloat64()
			if v == ScanExact || v == ScanSaturated {
				g = float64(rng.IntN(9) - 4)
			} else if v == ScanSpecial {
				g = rareNonFinite(rng, 400, g)
			}
			dy[k] = dtype.Round(dt, g)
			var xv float64
			switch op {
			case ops.ScanCumprod:
				if v == ScanExact {
					xv = []float64{1, -1, 1, -1, 1, -1, 1, -1, 0}[rng.IntN(9)]
				} else {
					// Near 1, closer for long slices: the products stay in range.
					xv = 1 + rng.NormFloat64()*math.Min(0.05, 0.5/math.Sqrt(float64(n)))
					if v == ScanSpecial && rng.IntN(200) == 0 {
						xv = math.NaN()
					}
				}
				if p == z1 || p == z2 {
					xv = 0
				}
			case ops.ScanCummax, ops.ScanCummin:
				xv = float64(rng.IntN(10))
				if v != ScanExact && rng.IntN(2) == 0 {
					xv = rng.NormFloat64() * 3
				}
				if v == ScanSaturated {
					xv = math.Min(rng.NormFloat64(), 0.5)
					if op == ops.ScanCummin {
						xv = -xv
					}
				}
				if v == ScanSpecial {
					xv = rareNonFinite(rng, 60, xv)
				}
			case ops.ScanLogcumsumexp:
				xv = rng.NormFloat64() * 2
				if v == ScanSpecial {
					switch rng.IntN(100) {
					case 0, 1, 2, 3:
						xv = math.Inf(-1)
					case 4:
						xv = 1000
					case 5:
						xv = -1000
					case 6:
						if n < 64 {
							xv = math.Inf(1)
						}
					}
					if p < lead {
						xv = math.Inf(-1)
					}
				}
			}
			x[k] = dtype.Round(dt, xv)
		}
	}
}

// rareNonFinite is NaN, +inf or -inf, each with probability 1/m (one
// draw of rng), else v.
func rareNonFinite(rng *rand.Rand, m int, v float64) float64 {
	switch rng.IntN(m) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1)
	case 2:
		return math.Inf(-1)
	}
	return v
}

// scanIndex is the element of slice idx at scan position p: idx[p], or
// idx[n-1-p] with reverse.
func scanIndex(idx []int, reverse bool, p int) int {
	if reverse {
		return idx[len(idx)-1-p]
	}
	return idx[p]
}

// smallestNormal is the dtype's smallest positive normal value.
func smallestNormal(dt dtype.DType) float64 {
	switch dt {
	case dtype.F16:
		return 0x1p-14
	case dtype.F64:
		return 0x1p-1022
	}
	return 0x1p-126
}

// scanNonFinite fills dy and x with ScanNonFinite's patterns, one a slice
// (pattern 0 keeps finite values, so that every case checks values too).
func scanNonFinite(rng *rand.Rand, op ops.ScanOp, dt dtype.DType, slices [][]int, reverse bool, dy, x []float64) {
	inf := math.Inf(1)
	sign := func() float64 { return float64(2*rng.IntN(2) - 1) }
	for _, idx := range slices {
		n := len(idx)
		at := func(p int) int { return scanIndex(idx, reverse, p) }
		// late: a scan position in the last quarter; anywhere: any position.
		late := func() int { return n - 1 - rng.IntN(1+n/4) }
		anywhere := func() int { return rng.IntN(n) }
		g := make([]float64, n)
		xs := make([]float64, n)
		for p := range g {
			g[p] = rng.NormFloat64()
		}
		pattern := rng.IntN(7)
		switch op {
		case ops.ScanCumprod:
			for p := range xs {
				xs[p] = 1 + rng.NormFloat64()*math.Min(0.05, 0.5/math.Sqrt(float64(n)))
			}
			switch pattern {
			case 1: // one ±inf late, no zero
				xs[late()] = sign() * inf
			case 2: // two ±inf, no zero, some dy 0 or ±inf
				xs[anywhere()], xs[anywhere()] = sign()*inf, sign()*inf
				for p := range g {
					switch rng.IntN(16) {
					case 0:
						g[p] = 0
					case 1:
						if rng.IntN(8) == 0 {
							g[p] = sign() * inf
						}
					}
				}
			case 3: // ±inf before the first zero and between it and a second
				if n >= 5 {
					z1 := 1 + rng.IntN(n/2)
					z2 := z1 + 2 + rng.IntN(n-z1-2)
					xs[rng.IntN(z1)] = sign() * inf
					xs[z1] = 0
					xs[z1+1+rng.IntN(z2-z1-1)] = sign() * inf
					xs[z2] = 0
				}
			case 4: // a zero, then ±inf after it (no second zero)
				if n >= 2 {
					z1 := rng.IntN(n - 1)
					xs[z1] = 0
					xs[z1+1+rng.IntN(n-z1-1)] = sign() * inf
				}
			case 5: // NaN, dy 0 from there on, sometimes a zero after it
				p0 := anywhere()
				xs[p0] = math.NaN()
				for p := p0; p < n; p++ {
					g[p] = 0
				}
				if p0+1 < n && rng.IntN(2) == 0 {
					xs[p0+1+rng.IntN(n-p0-1)] = 0
				}
			case 6: // y underflows, ±inf or NaN in dy, then a zero (and NaN last)
				if n >= 3 {
					s := math.Sqrt(smallestNormal(dt))
					for p := range xs {
						xs[p] = sign() * s * (0.5 + rng.Float64())
					}
					z1 := 1 + rng.IntN(n-2)
					g[rng.IntN(z1)] = []float64{inf, -inf, math.NaN()}[rng.IntN(3)]
					// The zero cuts a NaN at the end off the elements
					// before it; without one the slice ends in a 0 y.
					xs[z1] = 0
					if rng.IntN(2) == 0 {
						xs[n-1] = math.NaN()
					}
				}
			default: // a zero or none
				if rng.IntN(2) == 0 {
					xs[anywhere()] = 0
				}
			}
		case ops.ScanLogcumsumexp:
			for p := range xs {
				xs[p] = rng.NormFloat64() * 2
			}
			switch pattern {
			case 1: // NaN late
				xs[late()] = math.NaN()
			case 2: // +inf late, ±inf in dy at or after it
				p0 := late()
				xs[p0] = inf
				g[p0+rng.IntN(n-p0)] = sign() * inf
			case 3: // -inf runs (leading and inside), ±inf late in dy
				for p := 0; p < min(n, 1+rng.IntN(3)); p++ {
					xs[p] = math.Inf(-1)
				}
				for p := range xs {
					if rng.IntN(8) == 0 {
						xs[p] = math.Inf(-1)
					}
				}
				g[late()] = sign() * inf
			case 4: // +1000 (factors underflow), ±inf in dy after it
				p0 := anywhere()
				xs[p0] = 1000
				g[p0+rng.IntN(n-p0)] = sign() * inf
			case 5: // -1000 (c underflows), ±inf in dy late
				for p := range xs {
					if rng.IntN(6) == 0 {
						xs[p] = -1000
					}
				}
				g[late()] = sign() * inf
			case 6: // values near the ends of the range (x - y overflows), ±inf in dy late
				for p := range xs {
					if rng.IntN(3) == 0 {
						xs[p] = sign() * lpLarge(dt) * (0.5 + rng.Float64()/2)
					}
				}
				g[late()] = sign() * inf
			}
		}
		for p := range g {
			k := at(p)
			dy[k] = dtype.Round(dt, g[p])
			x[k] = dtype.Round(dt, xs[p])
		}
	}
}
