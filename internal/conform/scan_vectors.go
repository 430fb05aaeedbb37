package conform

import (
	"math"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

// CheckScanVectors runs the observed PyTorch vectors of ref.ScanVectors and
// the derived ones of ref.ScanDerivedVectors for one dtype in both
// directions: dx must have NaN and each infinity exactly where PyTorch has
// them and |dx| <= 1e-6 where PyTorch has 0, and match the reference on
// the dtype's rounded inputs to 2 ulp (PyTorch's values came from f32
// inputs).
func (e *Env) CheckScanVectors(dt dtype.DType) Result {
	res := Result{Kernel: "scan vectors " + dt.Suffix()}
	byName := map[string]ops.ScanOp{}
	for _, op := range ops.ScanOps() {
		byName[op.String()] = op
	}
	for _, v := range append(ref.ScanVectors[:len(ref.ScanVectors):len(ref.ScanVectors)], ref.ScanDerivedVectors...) {
		for _, reverse := range []bool{false, true} {
			res.Cases++
			n := len(v.X)
			x, dy, pinned := make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range x {
				j := i
				if reverse {
					j = n - 1 - i
				}
				x[j], dy[j], pinned[j] = dtype.Round(dt, v.X[i]), dtype.Round(dt, v.DY[i]), v.DX[i]
			}
			ys := ref.ScanForward(v.Op, x, reverse)
			y := make([]float64, n)
			for i := range ys {
				y[i] = dtype.Round(dt, ys[i])
			}
			got, err := e.runScanVector(byName[v.Op], dt, reverse, [3][]float64{dy, x, y})
			if err != nil {
				res.Failf("%s %v reverse=%v: %v", v.Op, v.X, reverse, err)
				continue
			}
			want, mag := ref.ScanBackwardMag(v.Op, dy, x, y, reverse)
			for i := range got {
				res.Checked++
				ok, _ := Compare(dt, got[i], want[i], scanTol(byName[v.Op], dt, false, n, mag[i]))
				if math.IsNaN(pinned[i]) != math.IsNaN(got[i]) || math.IsInf(pinned[i], 0) && got[i] != pinned[i] ||
					pinned[i] == 0 && math.Abs(got[i]) > 1e-6 || !ok {
					res.Failf("%s x=%v dy=%v reverse=%v: dx[%d] = %v, PyTorch %v, reference %v", v.Op, x, dy, reverse, i,
						got[i], pinned[i], dtype.Round(dt, want[i]))
				}
			}
		}
	}
	return res
}

func (e *Env) runScanVector(op ops.ScanOp, dt dtype.DType, reverse bool, in [3][]float64) ([]float64, error) {
	shape := []int{len(in[0])}
	plan, err := ops.NewScanBackward(ops.ScanDesc{Op: op, DType: dt, Shape: shape, Reverse: reverse})
	if err != nil {
		return nil, err
	}
	var os [4]*Operand
	defer func() {
		for _, o := range os {
			o.Free()
		}
	}()
	for i := range os {
		var vals []float64
		if i < 3 {
			vals = in[i]
		}
		if os[i], err = e.NewOperand(dt, shape, Contiguous(shape), vals); err != nil {
			return nil, err
		}
	}
	args := ops.ScanArgs{DY: os[0].Tensor(), X: os[1].Tensor(), Y: os[2].Tensor(), DX: os[3].Tensor()}
	if err := plan.Run(e.Stream, &args); err != nil {
		return nil, err
	}
	if err := e.Stream.Synchronize(); err != nil {
		return nil, err
	}
	return os[3].Read()
}
