package conform

import (
	"math"
	"math/rand/v2"

	"github.com/baracuda-go/baracuda/dtype"
)

// scanUnderflow fills dy and x of cumprod with ScanUnderflow's patterns,
// pattern i % 7 for slice i. pu is the scan position where y, rounded to
// dt, first is 0; the events come after it (before it for pattern 5's
// zero), at random positions.
func scanUnderflow(rng *rand.Rand, dt dtype.DType, slices [][]int, reverse bool, dy, x []float64) {
	inf := math.Inf(1)
	sign := func() float64 { return float64(2*rng.IntN(2) - 1) }
	for si, idx := range slices {
		n := len(idx)
		g := make([]float64, n)
		xs := make([]float64, n)
		pu := n
		prod := 1.0
		// f64's product, computed in f64, stops at the least subnormal
		// where |x| > 0.5 (it rounds up): f64 takes |x| in [0.3, 0.45).
		lo := 0.5
		if dt == dtype.F64 {
			lo = 0.3
		}
		for p := range xs {
			g[p] = rng.NormFloat64()
			xs[p] = dtype.Round(dt, sign()*(lo+(lo/2)*rng.Float64()))
			prod *= xs[p]
			if pu == n && dtype.Round(dt, prod) == 0 {
				pu = p
			}
		}
		// after: a position in (from, n), or -1 where there is none.
		after := func(from int) int {
			if from < 0 || from+1 >= n {
				return -1
			}
			return from + 1 + rng.IntN(n-from-1)
		}
		set := func(v []float64, p int, val float64) int {
			if p >= 0 {
				v[p] = val
			}
			return p
		}
		infs := func() float64 { return sign() * inf }
		switch si % 7 {
		case 0: // ±inf dy after the underflow, no zero
			set(g, after(pu), infs())
		case 1: // NaN dy, a zero after it, ±inf dy after the zero
			q := set(g, after(pu), math.NaN())
			if q >= 0 {
				set(g, after(set(xs, after(q), 0)), infs())
			}
		case 2: // a zero, ±inf dy after it
			if z := set(xs, after(pu), 0); z >= 0 {
				set(g, after(z), infs())
			}
		case 3: // ±inf dy, then two zeros
			if q := set(g, after(pu), infs()); q >= 0 {
				set(xs, after(set(xs, after(q), 0)), 0)
			}
		case 4: // finite dy, a zero after the underflow in half the slices
			if rng.IntN(2) == 0 {
				set(xs, after(pu), 0)
			}
		case 5: // a real zero before the underflow, ±inf and NaN dy after it
			if pu > 0 {
				z := set(xs, rng.IntN(pu), 0)
				set(g, after(z), infs())
				set(g, after(z), math.NaN())
			}
		case 6: // NaN in x late (the slice ends in a NaN y), ±inf dy
			set(g, after(pu), infs())
			set(xs, n-1-rng.IntN(1+n/8), math.NaN())
		}
		for p := range xs {
			k := scanIndex(idx, reverse, p)
			dy[k] = dtype.Round(dt, g[p])
			x[k] = xs[p]
		}
	}
}
