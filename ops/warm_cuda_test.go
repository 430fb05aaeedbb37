//go:build cuda

package ops

import (
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
)

// TestWarmLoadsEveryKernel: after Warm, every kernel a plan may launch is
// resolved in the context, and Progress counted each one once.
func TestWarmLoadsEveryKernel(t *testing.T) {
	ctx := deviceContext(t)
	var plans []Plan
	for _, dt := range dtype.All {
		b, err := NewBinaryBackward(BinaryDesc{Op: BinaryPow, DType: dt, Shape: []int{33}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReduceBackward(ReduceDesc{Op: ReduceStd, DType: dt, Shape: []int{4096, 64}, Axis: 0, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewScanBackward(ScanDesc{Op: ScanCummax, DType: dt, Shape: []int{4096, 64}, Axis: 0})
		if err != nil {
			t.Fatal(err)
		}
		l, err := NewLpPool2dBackward(LpPool2dDesc{DType: dt, P: 2, N: 2, C: 3, H: 16, W: 16, KernelH: 2, KernelW: 2, StrideH: 2, StrideW: 2})
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, b, r, s, l)
	}
	names := map[string]bool{}
	for _, p := range plans {
		for _, k := range p.kernelRefs() {
			names[k.name] = true
		}
	}
	calls, last := 0, 0
	err := Warm(ctx, WarmOptions{Progress: func(done, total int) {
		calls++
		if done != calls || total != len(names) {
			t.Errorf("progress %d/%d after %d calls, want %d kernels", done, total, calls, len(names))
		}
		last = done
	}}, plans...)
	if err != nil {
		t.Fatal(err)
	}
	if last != len(names) {
		t.Errorf("progress ended at %d of %d kernels", last, len(names))
	}
	for _, p := range plans {
		for _, k := range p.kernelRefs() {
			lf := k.last.Load()
			if lf == nil || lf.ctx != ctx {
				t.Errorf("%s: not resolved in the context after Warm", k.name)
			}
		}
	}
}
