package ref

import "math"

// LpPoolGeom is the geometry of an LP pool over [N, C, H, W] inputs; a 1d
// pool over [N, C, L] is the 2d pool with H = 1, KH = SH = 1, W = L.
type LpPoolGeom struct {
	N, C, H, W int
	KH, KW     int // window
	SH, SW     int // stride
	P          float64
	CeilMode   bool
}

// LpPoolOutputSize is PyTorch's pooling output length without padding:
// floor((l - k + (ceil ? s-1 : 0)) / s) + 1, and in ceil mode one less when
// the last window would start at or past l. It may be < 1, which PyTorch
// rejects.
func LpPoolOutputSize(l, k, s int, ceil bool) int {
	num := l - k
	if ceil {
		num += s - 1
	}
	out := floorDiv(num, s) + 1
	if ceil && out > 0 && (out-1)*s >= l {
		out--
	}
	return out
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Out returns (Ho, Wo).
func (g LpPoolGeom) Out() (int, int) {
	return LpPoolOutputSize(g.H, g.KH, g.SH, g.CeilMode), LpPoolOutputSize(g.W, g.KW, g.SW, g.CeilMode)
}

// count is c_w, the number of in-bounds cells of window (oh, ow).
func (g LpPoolGeom) count(oh, ow int) int {
	return min(g.KH, g.H-oh*g.SH) * min(g.KW, g.W-ow*g.SW)
}

// LpPoolForward returns y [N, C, Ho, Wo] for x [N, C, H, W] (row-major), as
// torch.nn.functional.lp_pool2d computes it: y_w = ((K/c_w) * Σ_{i∈w} x_i^p)^(1/p)
// with K = KH*KW and c_w the window's in-bounds count (the avg_pool divisor
// times the kernel area). sign(out)*relu(|out|) is out itself numerically.
func LpPoolForward(g LpPoolGeom, x []float64) []float64 {
	ho, wo := g.Out()
	y := make([]float64, g.N*g.C*ho*wo)
	k := float64(g.KH * g.KW)
	for nc := 0; nc < g.N*g.C; nc++ {
		for oh := 0; oh < ho; oh++ {
			for ow := 0; ow < wo; ow++ {
				s := 0.0
				for i := oh * g.SH; i < min(oh*g.SH+g.KH, g.H); i++ {
					for j := ow * g.SW; j < min(ow*g.SW+g.KW, g.W); j++ {
						s += math.Pow(x[(nc*g.H+i)*g.W+j], g.P)
					}
				}
				out := s / float64(g.count(oh, ow))
				y[(nc*ho+oh)*wo+ow] = math.Pow(out*k, 1/g.P)
			}
		}
	}
	return y
}

// LpPoolCoef is the gradient weight of one window: 0 where y == 0 (PyTorch's
// relu select, which also discards a NaN or inf dy), else
// dy * (K/c) * y^(1-p).
func LpPoolCoef(dy, y, k, c, p float64) float64 {
	if y == 0 {
		return 0
	}
	return dy * (k / c) * math.Pow(y, 1-p)
}

// LpPoolBackward returns dx [N, C, H, W] for the saved x, y and the upstream
// dy (row-major), the same loop as gen/lppool.cuh in float64:
//
//	dx_i = x_i^(p-1) * Σ_{w∋i} LpPoolCoef(dy_w, y_w, K, c_w, p)
//
// with windows w = (oh, ow) such that oh*SH <= i < oh*SH+KH and likewise
// along W, summed oh-major. The window sum is taken before the x factor, as
// PyTorch's avg_pool backward is, so a cell in no window gets 0*x^(p-1): 0
// for finite x^(p-1), NaN for a NaN or infinite one. p == 1 gives x^0 = 1.
func LpPoolBackward(g LpPoolGeom, dy, x, y []float64) []float64 {
	return lpGather(g, dy, x, y, false)
}

// LpPoolMagnitude returns, per input cell, |x_i^(p-1)| * Σ_{w∋i} |coef_w|:
// the scale of the terms summed into dx_i, against which a tolerance for
// cancellation is measured.
func LpPoolMagnitude(g LpPoolGeom, dy, x, y []float64) []float64 {
	return lpGather(g, dy, x, y, true)
}

// lpGather sums, per input cell, the coefficients of the windows holding
// it (oh-major) and multiplies by x^(p-1); with abs it sums and multiplies
// absolute values instead.
func lpGather(g LpPoolGeom, dy, x, y []float64, abs bool) []float64 {
	mag := func(v float64) float64 {
		if abs {
			return math.Abs(v)
		}
		return v
	}
	ho, wo := g.Out()
	out := make([]float64, g.N*g.C*g.H*g.W)
	k := float64(g.KH * g.KW)
	for nc := 0; nc < g.N*g.C; nc++ {
		for i := 0; i < g.H; i++ {
			for j := 0; j < g.W; j++ {
				s := 0.0
				for oh := 0; oh < ho; oh++ {
					if i < oh*g.SH || i >= oh*g.SH+g.KH {
						continue
					}
					for ow := 0; ow < wo; ow++ {
						if j < ow*g.SW || j >= ow*g.SW+g.KW {
							continue
						}
						o := (nc*ho+oh)*wo + ow
						s += mag(LpPoolCoef(dy[o], y[o], k, float64(g.count(oh, ow)), g.P))
					}
				}
				c := (nc*g.H+i)*g.W + j
				out[c] = s * mag(math.Pow(x[c], g.P-1))
			}
		}
	}
	return out
}
