package torchvec

import (
	"math"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
)

// The scan kernels' recurrence for cumprod and logcumsumexp (gen/scan_ops.cuh:
// CumprodBw, LogcumsumexpBw) in their opmath, float32 for f16, bf16 and f32
// and float64 for f64, over one slice in scan order as one thread's run
// computes it: the element factors of prep, then S = h + V, dx = c (.) S,
// V = a (.) S from the end. TestKernelOpmathModel runs it on every case of
// the vectors (slices of at most 8, one run in every mapping) against
// PyTorch: the rules hold where opmath rounds and underflows as the
// kernels do, not only in the reference's float64.
type opmath interface{ ~float32 | ~float64 }

func isFinite[M opmath](v M) bool { return v-v == 0 }

func modelCumprod[M opmath](x, y, g []M, single bool) []M {
	n := len(x)
	inf, nan := M(math.Inf(1)), M(math.NaN())
	a, c, h := make([]M, n), make([]M, n), make([]M, n)
	strong := make([]bool, n) // dx = 0 whatever S is (after the first zero)
	var w uint                // the forward state: 1 a zero came, 2 a ±inf or NaN x, 4 one after the first zero
	bits := func(v M) uint {
		switch {
		case v == 0:
			return 1
		case isFinite(v):
			return 0
		}
		return 2
	}
	for i := range n {
		z, iz := w&1 != 0, w&4 != 0
		xv, yv := x[i], y[i]
		fin, zero := isFinite(xv), xv == 0
		c[i] = 1
		if i > 0 {
			c[i] = y[i-1]
		}
		switch {
		case z:
			strong[i] = true
		case !single && !fin:
			c[i] = nan
		}
		cut := z && iz && zero
		a[i] = xv
		if cut {
			a[i] = nan
		}
		m0 := M(1)
		if !zero && (!isFinite(yv) || yv == 0) {
			m0 = M(math.Abs(float64(yv)))
		}
		m1 := M(1)
		if cut {
			m1 = nan
		} else if iz || !fin {
			m1 = inf
		}
		h[i] = g[i]
		switch {
		case single:
		case z:
			h[i] *= m1
		default:
			h[i] *= m0
		}
		b := bits(xv)
		w = w | b | ((w & (b >> 1) & 1) << 2)
	}
	dx := make([]M, n)
	var v M
	for i := n - 1; i >= 0; i-- {
		s := h[i] + v
		if !strong[i] {
			dx[i] = c[i] * s
		}
		if a[i] == 0 || s == 0 {
			v = 0
		} else {
			v = a[i] * s
		}
	}
	return dx
}

// modelLseExp is lse_exp: exp(p - q), at least the least positive value
// where p and q are finite, exactly 0 where p is -inf or q is +inf.
func modelLseExp[M opmath](p, q M) M {
	d := p - q
	e := M(math.Exp(float64(d)))
	var tiny M
	if _, ok := any(d).(float32); ok {
		tiny = M(math.Float32frombits(1))
	} else {
		tiny = M(math.SmallestNonzeroFloat64)
	}
	if p > M(math.Inf(-1)) && q < M(math.Inf(1)) && !(e >= tiny) && e == e {
		return tiny
	}
	return e
}

// modelLcse is logcumsumexp's recurrence: a = lse_factor(y before, y),
// c = r with dx = (r*S)*r, r = lse_exp(x/2, y/2); h = g, 0 for a NaN g.
func modelLcse[M opmath](x, y, g []M) []M {
	n := len(x)
	a, c, h := make([]M, n), make([]M, n), make([]M, n)
	inf := M(math.Inf(1))
	for i := 0; i < n; i++ {
		yp := M(0)
		if i > 0 {
			yp = y[i-1]
		}
		if yp == y[i] && y[i] == inf {
			a[i] = 1
		} else {
			a[i] = modelLseExp(yp, y[i])
		}
		c[i] = modelLseExp(x[i]*0.5, y[i]*0.5)
		h[i] = g[i]
		if g[i] != g[i] {
			h[i] = 0
		}
	}
	dx := make([]M, n)
	var v M
	for i := n - 1; i >= 0; i-- {
		s := h[i] + v
		dx[i] = (c[i] * s) * c[i]
		v = a[i] * s
	}
	return dx
}

// modelDx is the model's dx of a scan case, rounded to its dtype.
func modelDx(c *Case) []float64 {
	axis, _ := normAxis(c.Params.Axis, len(c.Shape))
	v := refSlices(c.Shape, axis)
	out := make([]float64, len(c.Tensors["x"]))
	for s := range v.Count() {
		idx := make([]int, v.K)
		for i := range idx {
			k := i
			if c.Params.Reverse {
				k = v.K - 1 - i
			}
			idx[i] = v.At(s, k)
		}
		get := func(name string) ([]float32, []float64) {
			t := c.Tensors[name]
			f32, f64 := make([]float32, v.K), make([]float64, v.K)
			for i, j := range idx {
				f32[i], f64[i] = float32(t[j]), t[j]
			}
			return f32, f64
		}
		x32, x64 := get("x")
		y32, y64 := get("y")
		g32, g64 := get("dy")
		var d []float64
		if c.DType == dtype.F64 {
			var r []float64
			if c.Op == "cumprod" {
				r = modelCumprod(x64, y64, g64, v.K == 1)
			} else {
				r = modelLcse(x64, y64, g64)
			}
			d = r
		} else {
			var r []float32
			if c.Op == "cumprod" {
				r = modelCumprod(x32, y32, g32, v.K == 1)
			} else {
				r = modelLcse(x32, y32, g32)
			}
			d = make([]float64, len(r))
			for i, q := range r {
				d[i] = dtype.Round(c.DType, float64(q))
			}
		}
		for i, j := range idx {
			out[j] = d[i]
		}
	}
	return out
}

func TestKernelOpmathModel(t *testing.T) {
	for _, load := range []func() (*Set, error){Load, LoadSample} {
		set, _ := load()
		for _, c := range set.Cases {
			if c.Family != "scan" || (c.Op != "cumprod" && c.Op != "logcumsumexp") {
				continue
			}
			exp, err := c.Reference()
			if err != nil {
				t.Fatal(err)
			}
			o := &Outcome{Case: c}
			c.Compare(o, exp[0], modelDx(c), nil, "model")
			if o.OK() {
				continue
			}
			t.Logf("== %s: model failed %d of %d", c.Name, o.Failed, o.Checked)
			for _, m := range o.Fail {
				t.Log("   ", strings.ReplaceAll(m, "; ", "\n      "))
			}
		}
	}
}
