package conform

import (
	"fmt"
	"slices"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/internal/torchvec"
	"github.com/baracuda-go/baracuda/ops"
)

// CheckTorchVectors runs every case of set through the public plans on the
// GPU and compares each gradient with PyTorch's, element by element, with
// the tolerances of the CPU comparison (torchvec.Tol, the reference's
// error scales): NaN only against NaN, an infinity only against the same
// infinity. Operands are contiguous, inside NaN guard bands. One outcome
// per case, in the set's order.
func (e *Env) CheckTorchVectors(set *torchvec.Set) []torchvec.Outcome {
	out := make([]torchvec.Outcome, len(set.Cases))
	for k, c := range set.Cases {
		o := &out[k]
		o.Case = c
		exp, err := c.Reference()
		if err != nil {
			o.Failf("%v", err)
			continue
		}
		got, err := e.runTorchCase(c)
		if err != nil {
			o.Failf("%v", err)
			continue
		}
		for _, x := range exp {
			c.Compare(o, x, got[x.Name], nil, "GPU")
		}
	}
	return out
}

// torchOperands are a case's tensors on the GPU, by name: the inputs with
// their values, the gradients NaN-filled.
type torchOperands struct {
	e   *Env
	ops map[string]*Operand
}

func (t *torchOperands) add(c *torchvec.Case, name string, shape []int, input bool) (ops.Tensor, error) {
	var vals []float64
	if input {
		vals = c.Tensors[name]
	}
	o, err := t.e.NewOperand(c.DType, shape, Contiguous(shape), vals)
	if err != nil {
		return ops.Tensor{}, fmt.Errorf("%s: %w", name, err)
	}
	t.ops[name] = o
	return o.Tensor(), nil
}

func (t *torchOperands) free() {
	for _, o := range t.ops {
		o.Free()
	}
}

// read returns the gradients after checking their guard bands.
func (t *torchOperands) read(names ...string) (map[string][]float64, error) {
	got := map[string][]float64{}
	for _, n := range names {
		v, err := t.ops[n].Read()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		got[n] = v
	}
	return got, nil
}

// runner is a plan's Run with its workspace size.
type runner struct {
	ws  int64
	run func(s *driver.Stream, ws driver.Buffer) error
}

// runTorchCase makes the case's plan, runs it once and returns its
// gradients by name.
func (e *Env) runTorchCase(c *torchvec.Case) (map[string][]float64, error) {
	t := &torchOperands{e: e, ops: map[string]*Operand{}}
	defer t.free()
	r, err := e.torchRunner(c, t)
	if err != nil {
		return nil, err
	}
	var ws driver.Buffer
	if r.ws > 0 {
		if ws, err = e.Ctx.Alloc(r.ws); err != nil {
			return nil, err
		}
		defer e.Ctx.Free(ws)
	}
	if err := r.run(e.Stream, ws); err != nil {
		return nil, fmt.Errorf("Run: %w", err)
	}
	if err := e.Stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("synchronize: %w", err)
	}
	return t.read(c.Grads()...)
}

// torchRunner builds the case's plan and operands.
func (e *Env) torchRunner(c *torchvec.Case, t *torchOperands) (runner, error) {
	p := c.Params
	type tensorSpec struct {
		name  string
		shape []int
		input bool
	}
	alloc := func(specs ...tensorSpec) ([]ops.Tensor, error) {
		ts := make([]ops.Tensor, len(specs))
		for i, s := range specs {
			var err error
			if ts[i], err = t.add(c, s.name, s.shape, s.input); err != nil {
				return nil, err
			}
		}
		return ts, nil
	}
	switch c.Family {
	case "binary":
		op, ok := lookupOp(ops.BinaryOps(), c.Op)
		if !ok {
			return runner{}, fmt.Errorf("no binary op %q", c.Op)
		}
		plan, err := ops.NewBinaryBackward(ops.BinaryDesc{Op: op, DType: c.DType, Shape: c.Shape, Alpha: c.Scalar(),
			Weight: p.Weight})
		if err != nil {
			return runner{}, err
		}
		ts, err := alloc(tensorSpec{"dy", c.Shape, true}, tensorSpec{"a", c.Shape, true}, tensorSpec{"b", c.Shape, true},
			tensorSpec{"da", c.Shape, false}, tensorSpec{"db", c.Shape, false})
		if err != nil {
			return runner{}, err
		}
		args := &ops.BinaryArgs{DY: ts[0], A: ts[1], B: ts[2], DA: ts[3], DB: ts[4]}
		return runner{run: func(s *driver.Stream, _ driver.Buffer) error { return plan.Run(s, args) }}, nil
	case "reduce":
		op, ok := lookupOp(ops.ReduceOps(), c.Op)
		if !ok {
			return runner{}, fmt.Errorf("no reduce op %q", c.Op)
		}
		plan, err := ops.NewReduceBackward(ops.ReduceDesc{Op: op, DType: c.DType, Shape: c.Shape, Axis: p.Axis,
			Correction: p.Correction})
		if err != nil {
			return runner{}, err
		}
		ts, err := alloc(tensorSpec{"x", c.Shape, true}, tensorSpec{"y", c.OutShape, true},
			tensorSpec{"dy", c.OutShape, true}, tensorSpec{"dx", c.Shape, false})
		if err != nil {
			return runner{}, err
		}
		args := &ops.ReduceArgs{X: ts[0], Y: ts[1], DY: ts[2], DX: ts[3]}
		return runner{ws: plan.WorkspaceSize(), run: func(s *driver.Stream, ws driver.Buffer) error {
			args.Workspace = ws
			return plan.Run(s, args)
		}}, nil
	case "scan":
		op, ok := lookupOp(ops.ScanOps(), c.Op)
		if !ok {
			return runner{}, fmt.Errorf("no scan op %q", c.Op)
		}
		plan, err := ops.NewScanBackward(ops.ScanDesc{Op: op, DType: c.DType, Shape: c.Shape, Axis: p.Axis,
			Reverse: p.Reverse})
		if err != nil {
			return runner{}, err
		}
		ts, err := alloc(tensorSpec{"dy", c.Shape, true}, tensorSpec{"x", c.Shape, true}, tensorSpec{"y", c.Shape, true},
			tensorSpec{"dx", c.Shape, false})
		if err != nil {
			return runner{}, err
		}
		args := &ops.ScanArgs{DY: ts[0], X: ts[1], Y: ts[2], DX: ts[3]}
		return runner{ws: plan.WorkspaceSize(), run: func(s *driver.Stream, ws driver.Buffer) error {
			args.Workspace = ws
			return plan.Run(s, args)
		}}, nil
	case "lppool":
		g, err := c.LpPoolGeom()
		if err != nil {
			return runner{}, err
		}
		var outShape []int
		var run func(*driver.Stream, *ops.LpPoolArgs) error
		if c.Op == "lp_pool1d" {
			plan, err := ops.NewLpPool1dBackward(ops.LpPool1dDesc{DType: c.DType, N: g.N, C: g.C, L: g.W, Kernel: g.KW,
				Stride: g.SW, P: g.P, CeilMode: g.CeilMode})
			if err != nil {
				return runner{}, err
			}
			outShape, run = plan.OutputShape(), plan.Run
		} else {
			plan, err := ops.NewLpPool2dBackward(ops.LpPool2dDesc{DType: c.DType, N: g.N, C: g.C, H: g.H, W: g.W,
				KernelH: g.KH, KernelW: g.KW, StrideH: g.SH, StrideW: g.SW, P: g.P, CeilMode: g.CeilMode})
			if err != nil {
				return runner{}, err
			}
			outShape, run = plan.OutputShape(), plan.Run
		}
		if !slices.Equal(outShape, c.OutShape) {
			return runner{}, fmt.Errorf("the plan's output shape %v differs from PyTorch's %v", outShape, c.OutShape)
		}
		ts, err := alloc(tensorSpec{"x", c.Shape, true}, tensorSpec{"y", c.OutShape, true},
			tensorSpec{"dy", c.OutShape, true}, tensorSpec{"dx", c.Shape, false})
		if err != nil {
			return runner{}, err
		}
		args := &ops.LpPoolArgs{X: ts[0], Y: ts[1], DY: ts[2], DX: ts[3]}
		return runner{run: func(s *driver.Stream, _ driver.Buffer) error { return run(s, args) }}, nil
	}
	return runner{}, fmt.Errorf("unknown family %q", c.Family)
}

// lookupOp finds the op whose String() is name.
func lookupOp[T fmt.Stringer](all []T, name string) (T, bool) {
	for _, op := range all {
		if op.String() == name {
			return op, true
		}
	}
	var zero T
	return zero, false
}
