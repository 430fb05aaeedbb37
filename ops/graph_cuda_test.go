//go:build cuda

package ops

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// graphCase is one plan with its buffers: inputs rewritten before each
// replay, outputs compared.
type graphCase struct {
	name    string
	plan    Plan
	run     func(*driver.Stream) error
	inputs  []graphBuf
	outputs []graphBuf
}

type graphBuf struct {
	buf driver.Buffer
	dt  dtype.DType
	n   int
}

// graphEnv allocates the cases' buffers and frees them at the end.
type graphEnv struct {
	t    *testing.T
	ctx  *driver.Context
	bufs []driver.Buffer
}

func (e *graphEnv) tensor(dt dtype.DType, shape ...int) (Tensor, graphBuf) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	buf, err := e.ctx.Alloc(int64(max(n, 1) * dt.Size()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.bufs = append(e.bufs, buf)
	return NewTensor(buf, dt, shape...), graphBuf{buf, dt, n}
}

func (e *graphEnv) workspace(size int64) driver.Buffer {
	if size == 0 {
		return driver.Buffer{}
	}
	buf, err := e.ctx.Alloc(size)
	if err != nil {
		e.t.Fatal(err)
	}
	e.bufs = append(e.bufs, buf)
	return buf
}

// fill writes new values into every input (near 1, so that prod and
// the pools stay finite).
func (e *graphEnv) fill(c *graphCase, rng *rand.Rand) {
	for _, in := range c.inputs {
		v := make([]float64, in.n)
		for i := range v {
			v[i] = 0.5 + rng.Float64()
		}
		if err := e.ctx.CopyHtoD(in.buf, dtype.Encode(in.dt, v)); err != nil {
			e.t.Fatal(err)
		}
	}
}

// read returns the bytes of every output.
func (e *graphEnv) read(c *graphCase) [][]byte {
	var out [][]byte
	for _, o := range c.outputs {
		b := make([]byte, o.n*o.dt.Size())
		if err := e.ctx.CopyDtoH(b, o.buf); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// graphCases are a Run of every family, the workspace-using paths of
// reduce and scan among them.
func graphCases(e *graphEnv) []*graphCase {
	var cs []*graphCase
	{
		p, err := NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: []int{1 << 16}})
		if err != nil {
			e.t.Fatal(err)
		}
		dy, bdy := e.tensor(dtype.F32, 1<<16)
		a, ba := e.tensor(dtype.F32, 1<<16)
		b, bb := e.tensor(dtype.F32, 1<<16)
		da, bda := e.tensor(dtype.F32, 1<<16)
		db, bdb := e.tensor(dtype.F32, 1<<16)
		args := &BinaryArgs{DY: dy, A: a, B: b, DA: da, DB: db}
		cs = append(cs, &graphCase{"binary mul f32", p, func(s *driver.Stream) error { return p.Run(s, args) },
			[]graphBuf{bdy, ba, bb}, []graphBuf{bda, bdb}})
	}
	{
		// The tile pass and its finish pass over the workspace.
		p, err := NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.BF16, Shape: []int{4096, 96}, BShape: []int{96}})
		if err != nil {
			e.t.Fatal(err)
		}
		if p.WorkspaceSize() == 0 {
			e.t.Fatal("a column sum over 4096 rows should take partials in a workspace")
		}
		dy, bdy := e.tensor(dtype.BF16, 4096, 96)
		a, ba := e.tensor(dtype.BF16, 4096, 96)
		b, bb := e.tensor(dtype.BF16, 96)
		da, bda := e.tensor(dtype.BF16, 4096, 96)
		db, bdb := e.tensor(dtype.BF16, 96)
		args := &BinaryArgs{DY: dy, A: a, B: b, DA: da, DB: db, Workspace: e.workspace(p.WorkspaceSize())}
		cs = append(cs, &graphCase{"bcast mul bf16 [4096 96]x[96]", p, func(s *driver.Stream) error { return p.Run(s, args) },
			[]graphBuf{bdy, ba, bb}, []graphBuf{bda, bdb}})
	}
	{
		p, err := NewReduceBackward(ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: []int{8192, 64}, Axis: 0, Correction: 1})
		if err != nil {
			e.t.Fatal(err)
		}
		if p.WorkspaceSize() == 0 {
			e.t.Fatal("var over 8192 rows of 64 should split its slices and take a workspace")
		}
		x, bx := e.tensor(dtype.F32, 8192, 64)
		y, by := e.tensor(dtype.F32, 1, 64)
		dy, bdy := e.tensor(dtype.F32, 64) // keepdim=False
		dx, bdx := e.tensor(dtype.F32, 8192, 64)
		args := &ReduceArgs{DY: dy, X: x, Y: y, DX: dx, Workspace: e.workspace(p.WorkspaceSize())}
		cs = append(cs, &graphCase{"reduce var f32 axis 0", p, func(s *driver.Stream) error { return p.Run(s, args) },
			[]graphBuf{bx, by, bdy}, []graphBuf{bdx}})
	}
	{
		p, err := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{1 << 20}, Axis: 0})
		if err != nil {
			e.t.Fatal(err)
		}
		if p.WorkspaceSize() == 0 {
			e.t.Fatal("cumsum over one axis of 2^20 should be chunked and take a workspace")
		}
		dy, bdy := e.tensor(dtype.F32, 1<<20)
		dx, bdx := e.tensor(dtype.F32, 1<<20)
		args := &ScanArgs{DY: dy, DX: dx, Workspace: e.workspace(p.WorkspaceSize())}
		cs = append(cs, &graphCase{"scan cumsum f32 2^20", p, func(s *driver.Stream) error { return p.Run(s, args) },
			[]graphBuf{bdy}, []graphBuf{bdx}})
	}
	{
		p, err := NewLpPool2dBackward(LpPool2dDesc{DType: dtype.BF16, N: 2, C: 4, H: 32, W: 32, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, P: 2})
		if err != nil {
			e.t.Fatal(err)
		}
		out := p.OutputShape()
		x, bx := e.tensor(dtype.BF16, 2, 4, 32, 32)
		y, by := e.tensor(dtype.BF16, out...)
		dy, bdy := e.tensor(dtype.BF16, out...)
		dx, bdx := e.tensor(dtype.BF16, 2, 4, 32, 32)
		args := &LpPoolArgs{DY: dy, X: x, Y: y, DX: dx}
		cs = append(cs, &graphCase{"lppool2d p2 bf16", p, func(s *driver.Stream) error { return p.Run(s, args) },
			[]graphBuf{bx, by, bdy}, []graphBuf{bdx}})
	}
	return cs
}

// TestGraphCaptureMatchesEagerRuns: a Run of every family, captured into
// one graph after Warm, replayed with new input values written into the
// same buffers, gives the eager Runs' bits each time.
func TestGraphCaptureMatchesEagerRuns(t *testing.T) {
	ctx := deviceContext(t)
	e := &graphEnv{t: t, ctx: ctx}
	defer func() {
		for _, b := range e.bufs {
			ctx.Free(b)
		}
	}()
	cs := graphCases(e)
	var plans []Plan
	for _, c := range cs {
		plans = append(plans, c.plan)
	}
	if err := Warm(ctx, WarmOptions{}, plans...); err != nil {
		t.Fatal(err)
	}
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()

	if err := s.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if err := c.run(s); err != nil {
			t.Fatalf("%s: Run during capture: %v", c.name, err)
		}
	}
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()

	rng := rand.New(rand.NewPCG(11, 12))
	prev := map[string][][]byte{}
	for replay := 0; replay < 3; replay++ {
		for _, c := range cs {
			e.fill(c, rng)
		}
		if err := g.Launch(s); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		fromGraph := map[string][][]byte{}
		for _, c := range cs {
			fromGraph[c.name] = e.read(c)
		}
		for _, c := range cs {
			if err := c.run(s); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			eager := e.read(c)
			for i := range eager {
				if !bytes.Equal(fromGraph[c.name][i], eager[i]) {
					t.Errorf("replay %d, %s: output %d differs from the eager Run's", replay, c.name, i)
				}
				if p := prev[c.name]; p != nil && bytes.Equal(p[i], eager[i]) {
					t.Errorf("replay %d, %s: output %d did not change with new inputs", replay, c.name, i)
				}
			}
			prev[c.name] = eager
		}
	}
}

// TestGraphCaptureFailsClearly: a synchronize during capture fails at
// once (no hang), EndCapture reports the invalidated capture, and the
// stream then runs work again.
func TestGraphCaptureFailsClearly(t *testing.T) {
	ctx := deviceContext(t)
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	buf, err := ctx.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(buf)
	if err := s.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	if on, err := s.Capturing(); err != nil || !on {
		t.Fatalf("Capturing after BeginCapture: %v, %v", on, err)
	}
	if err := s.MemsetD8Async(buf, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err == nil {
		t.Error("a synchronize of the capturing stream succeeded")
	} else {
		t.Logf("synchronize during capture: %v", err)
	}
	if g, err := s.EndCapture(); err == nil {
		g.Destroy()
		t.Error("EndCapture after a synchronize gave a graph")
	} else {
		t.Logf("EndCapture: %v", err)
	}
	if on, err := s.Capturing(); err != nil || on {
		t.Errorf("Capturing after EndCapture: %v, %v", on, err)
	}
	if err := s.MemsetD8Async(buf, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Errorf("the stream after the failed capture: %v", err)
	}
}
