package cpu_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/baracuda-go/baracuda/cpu"
	"github.com/baracuda-go/baracuda/ops"
)

// gradCheck compares grad, the backward's dx, with central differences of
// L(x) = Σ dy·forward(x), one element of x at a time.
func gradCheck(t *testing.T, name string, x, dy, grad []float64, forward func([]float64) ([]float64, error)) {
	t.Helper()
	const h = 1e-6
	xp := append([]float64(nil), x...)
	loss := func() float64 {
		y, err := forward(xp)
		require.NoError(t, err, "%s: forward", name)
		s := 0.0
		for i := range y {
			s += dy[i] * y[i]
		}
		return s
	}
	for i := range x {
		xp[i] = x[i] + h
		up := loss()
		xp[i] = x[i] - h
		down := loss()
		xp[i] = x[i]
		want := (up - down) / (2 * h)
		if math.Abs(grad[i]-want) > 1e-5*(1+math.Abs(want)) {
			t.Errorf("%s: dx[%d] = %v, central difference %v", name, i, grad[i], want)
			return
		}
	}
}

// distinct returns n values of about 1 in size, all different (so that
// max, min, cummax and cummin have no ties), positive where pos.
func distinct(rng *rand.Rand, n int, pos bool) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64() + float64(i)*1e-3
		if pos {
			v[i] = math.Abs(v[i]) + 0.5
		}
	}
	return v
}

func TestReduceGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shape := []int{3, 4, 5}
	for _, op := range ops.ReduceOps() {
		for axis := -1; axis < 3; axis++ {
			desc := ops.ReduceDesc{Op: op, DType: ops.F64, Shape: shape, Axis: axis, Correction: 1}
			x := distinct(rng, 60, op == ops.ReduceProd)
			y, err := cpu.ReduceForward(desc, x)
			require.NoError(t, err)
			dy := distinct(rng, len(y), false)
			dx, err := cpu.ReduceBackward(desc, dy, x, y)
			require.NoError(t, err)
			gradCheck(t, op.String(), x, dy, dx, func(x []float64) ([]float64, error) { return cpu.ReduceForward(desc, x) })
		}
	}
}

// TestReduceAxesGradients: reductions over several axes (Axes) against
// finite differences of their forward.
func TestReduceAxesGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	shape := []int{3, 4, 5}
	for _, op := range ops.ReduceOps() {
		for _, axes := range [][]int{{0, 2}, {-1, 0}, {1, 2}, {0, 1, 2}} {
			desc := ops.ReduceDesc{Op: op, DType: ops.F64, Shape: shape, Axes: axes, Correction: 1}
			x := distinct(rng, 60, op == ops.ReduceProd)
			y, err := cpu.ReduceForward(desc, x)
			require.NoError(t, err)
			dy := distinct(rng, len(y), false)
			dx, err := cpu.ReduceBackward(desc, dy, x, y)
			require.NoError(t, err)
			gradCheck(t, op.String(), x, dy, dx, func(x []float64) ([]float64, error) { return cpu.ReduceForward(desc, x) })
		}
	}
}

func TestScanGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shape := []int{4, 6}
	for _, op := range ops.ScanOps() {
		for _, axis := range []int{0, 1} {
			for _, rev := range []bool{false, true} {
				desc := ops.ScanDesc{Op: op, DType: ops.F32, Shape: shape, Axis: axis, Reverse: rev}
				x := distinct(rng, 24, op == ops.ScanCumprod)
				y, err := cpu.ScanForward(desc, x)
				require.NoError(t, err)
				dy := distinct(rng, 24, false)
				dx, err := cpu.ScanBackward(desc, dy, x, y)
				require.NoError(t, err)
				gradCheck(t, op.String(), x, dy, dx, func(x []float64) ([]float64, error) { return cpu.ScanForward(desc, x) })
			}
		}
	}
}

func TestBinaryGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, op := range ops.BinaryOps() {
		desc := ops.BinaryDesc{Op: op, DType: ops.BF16, Shape: []int{2, 7}, Alpha: 0.75, Weight: 0.3}
		a, b, dy := distinct(rng, 14, true), distinct(rng, 14, true), distinct(rng, 14, false)
		for i := range b {
			b[i] += 0.1 // maximum and minimum: no ties with a
		}
		da, db, err := cpu.BinaryBackward(desc, dy, a, b)
		require.NoError(t, err)
		gradCheck(t, op.String()+" da", a, dy, da, func(a []float64) ([]float64, error) { return cpu.BinaryForward(desc, a, b) })
		gradCheck(t, op.String()+" db", b, dy, db, func(b []float64) ([]float64, error) { return cpu.BinaryForward(desc, a, b) })
	}
	// add does not read a and b.
	da, db, err := cpu.BinaryBackward(ops.BinaryDesc{Op: ops.BinaryAdd, DType: ops.F32, Shape: []int{2}, Alpha: 2}, []float64{1, -3}, nil, nil)
	require.NoError(t, err, "add with alpha 2")
	assert.Equal(t, []float64{1, -3}, da, "add with alpha 2: da")
	assert.Equal(t, []float64{2, -6}, db, "add with alpha 2: db")
}

func TestLpPoolGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, p := range []float64{1, 2, 3.5} {
		d2 := ops.LpPool2dDesc{DType: ops.F32, N: 2, C: 2, H: 5, W: 6, KernelH: 2, KernelW: 3, StrideH: 2, StrideW: 2, P: p, CeilMode: true}
		x := distinct(rng, 2*2*5*6, true)
		y, err := cpu.LpPool2dForward(d2, x)
		require.NoError(t, err)
		dy := distinct(rng, len(y), false)
		dx, err := cpu.LpPool2dBackward(d2, dy, x, y)
		require.NoError(t, err)
		gradCheck(t, "lppool2d", x, dy, dx, func(x []float64) ([]float64, error) { return cpu.LpPool2dForward(d2, x) })

		d1 := ops.LpPool1dDesc{DType: ops.F16, N: 2, C: 3, L: 9, Kernel: 4, Stride: 3, P: p}
		x1 := distinct(rng, 2*3*9, true)
		y1, err := cpu.LpPool1dForward(d1, x1)
		require.NoError(t, err)
		dy1 := distinct(rng, len(y1), false)
		dx1, err := cpu.LpPool1dBackward(d1, dy1, x1, y1)
		require.NoError(t, err)
		gradCheck(t, "lppool1d", x1, dy1, dx1, func(x []float64) ([]float64, error) { return cpu.LpPool1dForward(d1, x) })
	}
}

func TestErrors(t *testing.T) {
	_, err := cpu.ReduceForward(ops.ReduceDesc{Op: ops.ReduceMax, DType: ops.F32, Shape: []int{3, 0}, Axis: 1}, nil)
	assert.ErrorIs(t, err, ops.ErrShape, "max over an empty axis")
	_, err = cpu.ReduceBackward(ops.ReduceDesc{Op: ops.ReduceVar, DType: ops.F32, Shape: []int{3, 4}, Axis: 1, Correction: 1}, make([]float64, 3), make([]float64, 12), nil)
	assert.ErrorContains(t, err, "y has 0 elements, the shape needs 3", "var without y")
	_, err = cpu.ScanForward(ops.ScanDesc{Op: ops.ScanCumsum, DType: ops.F32, Shape: []int{5}}, make([]float64, 4))
	assert.ErrorContains(t, err, "x has 4 elements, the shape needs 5", "short x")
	_, _, err = cpu.BinaryBackward(ops.BinaryDesc{Op: ops.BinaryMul, DType: ops.F32, Shape: []int{2}}, []float64{1, 2}, nil, nil)
	assert.Error(t, err, "mul without a and b")
}

// BenchmarkReduceBackward times the var backward over 2^20 elements: the
// speed docs quote.
func BenchmarkReduceBackward(b *testing.B) {
	desc := ops.ReduceDesc{Op: ops.ReduceVar, DType: ops.F32, Shape: []int{1024, 1024}, Axis: 1, Correction: 1}
	x := make([]float64, 1<<20)
	for i := range x {
		x[i] = float64(i % 7)
	}
	y, _ := cpu.ReduceForward(desc, x)
	dy := make([]float64, 1024)
	b.ResetTimer()
	for range b.N {
		if _, err := cpu.ReduceBackward(desc, dy, x, y); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBinaryBroadcast: b of [3] against dy of [2, 3] sums db over the
// rows; a 0-d a sums da over everything; a bad BShape is the plan's error.
func TestBinaryBroadcast(t *testing.T) {
	desc := ops.BinaryDesc{Op: ops.BinaryMul, DType: ops.F64, Shape: []int{2, 3}, AShape: []int{}, BShape: []int{3}}
	dy := []float64{1, 2, 3, 4, 5, 6}
	da, db, err := cpu.BinaryBackward(desc, dy, []float64{2}, []float64{1, 10, 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(da) != 1 || da[0] != 1*1+2*10+3*100+4*1+5*10+6*100 {
		t.Errorf("da = %v, want [975]", da)
	}
	if len(db) != 3 || db[0] != 2*(1+4) || db[1] != 2*(2+5) || db[2] != 2*(3+6) {
		t.Errorf("db = %v, want [10 14 18]", db)
	}
	y, err := cpu.BinaryForward(desc, []float64{2}, []float64{1, 10, 100})
	if err != nil || len(y) != 6 || y[4] != 20 {
		t.Errorf("forward = %v, %v; want y[4] = 20", y, err)
	}
	desc.BShape = []int{2}
	if _, _, err := cpu.BinaryBackward(desc, dy, []float64{2}, []float64{1, 2}); !errors.Is(err, ops.ErrShape) {
		t.Errorf("BShape [2] against [2 3]: err %v, want ErrShape", err)
	}
}
