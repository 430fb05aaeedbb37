package ref

import (
	"fmt"
	"math"
	"math/rand/v2"
)

func init() {
	checks = append(checks,
		Check{"lppool finite differences", checkLpPoolFD},
		Check{"lppool PyTorch vectors", checkLpPoolVectors})
}

func lossOf(g LpPoolGeom, dy, x []float64) float64 {
	y := LpPoolForward(g, x)
	s := 0.0
	for i := range y {
		s += dy[i] * y[i]
	}
	return s
}

// checkLpPoolFD checks the backward against central
// differences of the forward for 1d and 2d pools, overlapping and gapped
// windows, ceil-mode partial windows and several p, at points away from
// kinks (no zero windows; negative inputs only for even p).
func checkLpPoolFD() error {
	rng := rand.New(rand.NewPCG(3, 4))
	ps := []float64{1, 2, 3, 2.5, 1.5, 4, 0.75}
	for trial := 0; trial < 300; trial++ {
		g := LpPoolGeom{N: 1 + rng.IntN(2), C: 1 + rng.IntN(2), P: ps[trial%len(ps)], CeilMode: rng.IntN(2) == 0}
		if trial%3 == 0 { // 1d
			g.H, g.KH, g.SH = 1, 1, 1
		} else {
			g.H, g.KH, g.SH = 1+rng.IntN(7), 1+rng.IntN(4), 1+rng.IntN(4)
		}
		g.W, g.KW, g.SW = 1+rng.IntN(9), 1+rng.IntN(4), 1+rng.IntN(4)
		if ho, wo := g.Out(); ho < 1 || wo < 1 {
			continue
		}
		ho, wo := g.Out()
		x := make([]float64, g.N*g.C*g.H*g.W)
		for i := range x {
			x[i] = 0.3 + 1.7*rng.Float64()
			if (g.P == 2 || g.P == 4) && rng.IntN(2) == 0 {
				x[i] = -x[i]
			}
		}
		dy := make([]float64, g.N*g.C*ho*wo)
		for i := range dy {
			dy[i] = rng.Float64()*2 - 1
		}
		y := LpPoolForward(g, x)
		dx := LpPoolBackward(g, dy, x, y)
		for i := range x {
			f := func(v float64) float64 {
				old := x[i]
				x[i] = v
				l := lossOf(g, dy, x)
				x[i] = old
				return l
			}
			fd := centralDiff(f, x[i])
			if !closeRel(dx[i], fd, 1e-6) {
				return fmt.Errorf("%+v: dx[%d] = %v, finite differences %v", g, i, dx[i], fd)
			}
		}
	}
	return nil
}

// checkLpPoolVectors pins the observed PyTorch 2.11 values of lp_pool1d's
// backward (dy = 1; docs/semantics.md 5).
func checkLpPoolVectors() error {
	cases := []struct {
		p        float64
		k, s     int
		ceil     bool
		x, y, dx []float64
	}{
		{2, 2, 2, false, []float64{0, 0, 3, 4}, nil, []float64{0, 0, .6, .8}},
		{2, 2, 2, true, []float64{1, 2, 3, 4, 5}, []float64{2.23607, 5, 7.07107}, []float64{.44721, .89443, .6, .8, 1.41421}},
		{3, 2, 2, false, []float64{-1, 2}, nil, []float64{0.27328, 1.09310}},
	}
	for _, c := range cases {
		g := LpPoolGeom{N: 1, C: 1, H: 1, W: len(c.x), KH: 1, KW: c.k, SH: 1, SW: c.s, P: c.p, CeilMode: c.ceil}
		y := LpPoolForward(g, c.x)
		if c.y != nil {
			for i := range c.y {
				if math.Abs(y[i]-c.y[i]) > 1e-5 {
					return fmt.Errorf("p=%v x=%v: y[%d] = %v, want %v", c.p, c.x, i, y[i], c.y[i])
				}
			}
		}
		dy := make([]float64, len(y))
		for i := range dy {
			dy[i] = 1
		}
		dx := LpPoolBackward(g, dy, c.x, y)
		for i := range c.dx {
			if math.Abs(dx[i]-c.dx[i]) > 1e-5 {
				return fmt.Errorf("p=%v x=%v: dx[%d] = %v, want %v", c.p, c.x, i, dx[i], c.dx[i])
			}
		}
	}
	return nil
}
