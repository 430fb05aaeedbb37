package ref

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A float32 model of the carry in the scan kernels (gen/scan.cuh), with no
// GPU: how the rounding of dx grows with the axis length. The model
// follows the kernels' order of operations: runs of 16 elements per
// thread, maps composed across the 32 lanes of a warp (row mapping; the
// col mapping has one run per warp), 8 warps a tile, tiles chained one
// after another (the look-back's sequential chain). Its exp leans one ulp
// low, as a library exp may for like arguments, which is what makes a
// long product of rounded factors drift.

type aff32 struct{ a, u float32 }

// expLow is exp rounded to float32, then one ulp toward 0.
func expLow(d float32) float32 {
	return math.Nextafter32(float32(math.Exp(float64(d))), 0)
}

func fma32(a, b, c float32) float32 { return float32(float64(a)*float64(b) + float64(c)) }

func compose32(p, q aff32) aff32         { return aff32{p.a * q.a, fma32(p.a, q.u, p.u)} }
func apply32(p aff32, v float32) float32 { return fma32(p.a, v, p.u) }

// carry32 returns dx for one slice (forward scan order) as the kernels
// compute it from the element factors a and c, with runs of run elements,
// lanes runs a warp, 8 warps a tile. runF and tileF, where not nil, give
// the factor of the full run [k0, k1) and of the tile [t0, t1) (t0 > 0)
// directly, as LogcumsumexpBw's Span; else they are products of the
// element factors.
func carry32(a, c, g []float32, run, lanes int, runF, tileF func(k0, k1 int) float32) []float32 {
	const warps = 8
	n := len(a)
	runs := lanes * warps
	tile := run * runs
	dx := make([]float32, n)
	vin := float32(0)
	for t0 := (n - 1) / tile * tile; t0 >= 0; t0 -= tile {
		agg := make([]aff32, runs)
		for r := range agg {
			agg[r] = aff32{1, 0}
			k0 := t0 + r*run
			if k0 >= n {
				continue
			}
			k1 := min(k0+run, n)
			u, pa := float32(0), float32(1)
			for k := k1 - 1; k >= k0; k-- {
				u = a[k] * (g[k] + u)
				pa = a[k] * pa
			}
			if runF != nil && k0 > 0 && k1-k0 == run {
				pa = runF(k0, k1)
			}
			agg[r] = aff32{pa, u}
		}
		// Each warp: the lanes' exclusive maps (Hillis-Steele, later lanes
		// composed) and its total.
		ex := make([]aff32, runs)
		wt := make([]aff32, warps)
		for w := 0; w < warps; w++ {
			v := append([]aff32(nil), agg[w*lanes:(w+1)*lanes]...)
			for off := 1; off < lanes; off <<= 1 {
				nv := append([]aff32(nil), v...)
				for l := 0; l+off < lanes; l++ {
					nv[l] = compose32(v[l], v[l+off])
				}
				v = nv
			}
			for l := 0; l < lanes; l++ {
				ex[w*lanes+l] = aff32{1, 0}
				if l+1 < lanes {
					ex[w*lanes+l] = v[l+1]
				}
			}
			wt[w] = v[0]
		}
		// The tile's map: the warps composed, the last (upstream) first.
		tot := aff32{1, 0}
		for w := warps - 1; w >= 0; w-- {
			tot = compose32(wt[w], tot)
		}
		if tileF != nil && t0 > 0 {
			tot.a = tileF(t0, min(t0+tile, n))
		}
		for r := 0; r < runs; r++ {
			k0 := t0 + r*run
			if k0 >= n {
				continue
			}
			v := vin
			for w := warps - 1; w > r/lanes; w-- {
				v = apply32(wt[w], v)
			}
			v = apply32(ex[r], v)
			for k := min(k0+run, n) - 1; k >= k0; k-- {
				s := g[k] + v
				dx[k] = c[k] * s
				v = a[k] * s
			}
		}
		vin = apply32(tot, vin)
	}
	return dx
}

// carryError is the largest |dx - ref| / (eps * magnitude) of one
// logcumsumexp slice of n elements (the reference on the same float32
// inputs) whose y barely moves after a large first x (every factor near 1,
// so every dy reaches every earlier element) with dy > 0 (the roundings
// add up rather than cancel): the case where the drift of a long product
// of factors shows most. span takes the run and tile factors directly.
func carryError(n, run, lanes int, span bool) float64 {
	rng := rand.New(rand.NewPCG(uint64(n), 9))
	x := make([]float32, n)
	g := make([]float32, n)
	x64 := make([]float64, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() - 10)
		if i == 0 {
			x[i] = 20
		}
		g[i] = float32(math.Abs(rng.NormFloat64()))
		x64[i] = float64(x[i])
	}
	y64 := ScanForward("logcumsumexp", x64, false)
	y := make([]float32, n)
	yr := make([]float64, n)
	gr := make([]float64, n)
	for i := range y {
		y[i] = float32(y64[i])
		yr[i], gr[i] = float64(y[i]), float64(g[i])
	}
	a := make([]float32, n)
	c := make([]float32, n)
	for k := range a {
		if k > 0 {
			a[k] = expLow(y[k-1] - y[k])
		}
		c[k] = expLow(x[k] - y[k])
	}
	var runF, tileF func(k0, k1 int) float32
	if span {
		runF = func(k0, k1 int) float32 { return expLow(y[k0-1] - y[k1-1]) }
		tileF = func(t0, t1 int) float32 { return float32(math.Exp(float64(y[t0-1]) - float64(y[t1-1]))) }
	}
	want, mag := ScanBackwardMag("logcumsumexp", gr, x64, yr, false)
	got := carry32(a, c, g, run, lanes, runF, tileF)
	worst := 0.0
	for k := range got {
		worst = math.Max(worst, math.Abs(float64(got[k])-want[k])/(0x1p-23*mag[k]))
	}
	return worst
}

// TestLogcumsumexpCarryErrorGrowth: with span factors the rounding of dx
// is no worse at 262144 elements than at 16384 (16 times as many) in the
// row mapping's blocking (tiles of 4096) or the col mapping's (tiles of
// 128), and within the conformance tolerance's sqrt(n) scale; with
// products of the element factors it grows with the length.
func TestLogcumsumexpCarryErrorGrowth(t *testing.T) {
	for _, m := range []struct {
		name       string
		run, lanes int
	}{{"row", 16, 32}, {"col", 16, 1}} {
		short, long := carryError(1<<14, m.run, m.lanes, true), carryError(1<<18, m.run, m.lanes, true)
		pshort, plong := carryError(1<<14, m.run, m.lanes, false), carryError(1<<18, m.run, m.lanes, false)
		t.Logf("%s: span factors %.0f -> %.0f eps, element products %.0f -> %.0f eps", m.name, short, long, pshort, plong)
		if long > 2*short+16 || long > 8*math.Sqrt(1<<18) {
			t.Errorf("%s: span factors err %.0f eps at 2^14 elements, %.0f at 2^18: grows with the length", m.name, short, long)
		}
		if plong < 4*pshort {
			t.Errorf("%s: element products err %.0f eps at 2^14 elements, %.0f at 2^18: the model shows no drift to avoid", m.name, pshort, plong)
		}
	}
}
