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
						s += Pow(x[(nc*g.H+i)*g.W+j], g.P)
					}
				}
				out := s / float64(g.count(oh, ow))
				y[(nc*ho+oh)*wo+ow] = Pow(out*k, 1/g.P)
			}
		}
	}
	return y
}

// LpPoolCoef is the gradient weight of one window from its saved output y,
// as PyTorch's autograd through sign(out)*relu(|out|) gives it:
//
//   - 0 where y == 0: relu's select, which also discards a NaN or inf dy;
//   - w*0 where y is NaN, w = dy * (K/c) * y^(1-p): sign(NaN) is 0, and the
//     sign and abs backwards multiply by it. That is NaN for p != 1 (w is
//     NaN), and for p == 1 (y^0 = 1) 0 unless dy is NaN or infinite;
//   - w otherwise.
//
// It takes y as saved; LpPoolBackward replaces it by the pooled sum where
// y overflowed (p < 1).
func LpPoolCoef(dy, y, k, c, p float64) float64 {
	if y == 0 {
		return 0
	}
	w := dy * (k / c) * Pow(y, 1-p)
	if math.IsNaN(y) {
		return w * 0
	}
	return w
}

// LpPoolCoefSum is the gradient weight of a window from its pooled sum
// q = (K/c) * Σ_{i∈w} x_i^p, the operand of PyTorch's pow(q, 1/p):
// dy * (K/c) * q^(1/p-1), which is LpPoolCoef's value for y = q^(1/p).
// The backward takes it where p < 1 and y = +inf: y overflowed while q did
// not, and PyTorch's gradient, which comes from q, is finite.
func LpPoolCoefSum(dy, q, k, c, p float64) float64 {
	return dy * (k / c) * Pow(q, 1/p-1)
}

// LpPoolBackward returns dx [N, C, H, W] for the saved x, y and the upstream
// dy (row-major), the same loop as gen/lppool.cuh in float64:
//
//	dx_i = x_i^(p-1) * Σ_{w∋i} coef_w
//
// with windows w = (oh, ow) such that oh*SH <= i < oh*SH+KH and likewise
// along W, summed oh-major, coef_w LpPoolCoef(dy_w, y_w, K, c_w, p), or
// for p < 1 where y_w = +inf LpPoolCoefSum of the window's pooled sum,
// recomputed from x. The window sum is taken before the x factor, as
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

// coef is the weight of window (oh, ow) of plane nc (LpPoolBackward).
func (g LpPoolGeom) coef(dy, x, y []float64, nc, oh, ow int) float64 {
	ho, wo := g.Out()
	o := (nc*ho+oh)*wo + ow
	k, c := float64(g.KH*g.KW), float64(g.count(oh, ow))
	if g.P < 1 && math.IsInf(y[o], 1) {
		s := 0.0
		for i := oh * g.SH; i < min(oh*g.SH+g.KH, g.H); i++ {
			for j := ow * g.SW; j < min(ow*g.SW+g.KW, g.W); j++ {
				s += Pow(x[(nc*g.H+i)*g.W+j], g.P)
			}
		}
		return LpPoolCoefSum(dy[o], k/c*s, k, c, g.P)
	}
	return LpPoolCoef(dy[o], y[o], k, c, g.P)
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
	coef := make([]float64, len(dy))
	for nc := 0; nc < g.N*g.C; nc++ {
		for oh := 0; oh < ho; oh++ {
			for ow := 0; ow < wo; ow++ {
				coef[(nc*ho+oh)*wo+ow] = mag(g.coef(dy, x, y, nc, oh, ow))
			}
		}
	}
	out := make([]float64, g.N*g.C*g.H*g.W)
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
						s += coef[(nc*ho+oh)*wo+ow]
					}
				}
				c := (nc*g.H+i)*g.W + j
				out[c] = s * mag(Pow(x[c], g.P-1))
			}
		}
	}
	return out
}
