//go:build cuda

package ops_test

import (
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/conform"
	"github.com/baracuda-go/baracuda/ops"
)

// TestReduceAxesRunZeroAllocs: a warm Run of a plan over several axes, on
// the seg path and on the single path (dy and y in reduced form, so that
// Run views every operand), allocates nothing on the Go heap.
func TestReduceAxesRunZeroAllocs(t *testing.T) {
	env, err := conform.NewEnv(0)
	if err != nil {
		t.Fatalf("GPU environment: %v", err)
	}
	defer env.Close()
	for _, axes := range [][]int{{0, 2}, {1, 2}} {
		shape := []int{8, 64, 96}
		plan, err := ops.NewReduceBackward(ops.ReduceDesc{Op: ops.ReduceVar, DType: dtype.F32, Shape: shape, Axes: axes, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		alloc := func(n int) driver.Buffer { return onesBuffer(t, env, int64(n)*4) }
		red := plan.ReducedShape()
		m := 1
		for _, d := range red {
			m *= d
		}
		args := &ops.ReduceArgs{X: ops.NewTensor(alloc(8*64*96), dtype.F32, shape...), DX: ops.NewTensor(alloc(8*64*96), dtype.F32, shape...),
			DY: ops.NewTensor(alloc(m), dtype.F32, red...), Y: ops.NewTensor(alloc(m), dtype.F32, red...)}
		if ws := plan.WorkspaceSize(); ws > 0 {
			args.Workspace = alloc(int(ws / 4))
		}
		allocs := warmRunAllocs(t, env.Stream, 100, func() error { return plan.Run(env.Stream, args) })
		if allocs != 0 {
			t.Errorf("%s path (%s): %.1f allocations per warm Run, want 0", plan.Path(), plan.Kernel().Name, allocs)
		}
	}
}
