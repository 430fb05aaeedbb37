package ops

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// Tests of the reduce launch policy (reduce_policy.go) without a GPU: the
// launches Launches reports for ops, dtypes, shapes, axis sets, operand
// layouts and devices, and what holds for every plan.

// reduceOperands are operands of p's shapes (x and dx p's, dy and y the
// keepdim shape), each in a buffer of its own offset elements past a
// 256 MiB boundary, column-major where transpose is set, and a workspace
// where the plan needs one.
func reduceOperands(p *ReduceBackward, transpose bool, offset int64) *ReduceArgs {
	size := int64(p.desc.DType.Size())
	mk := func(shape []int, i int64) Tensor {
		t := Tensor{DType: p.desc.DType, Shape: shape}
		if transpose {
			t.Strides = make([]int, len(shape))
			s := 1
			for d := range shape {
				t.Strides[d] = s
				s *= shape[d]
			}
		}
		t.Buf = driver.Buffer{Addr: driver.DevicePtr((i+1)<<28 + offset*size), Size: numel(shape) * size}
		return t
	}
	a := &ReduceArgs{X: mk(p.shape, 0), DX: mk(p.shape, 1), DY: mk(p.keep, 2), Y: mk(p.keep, 3)}
	if w := p.WorkspaceSize(); w > 0 {
		a.Workspace = driver.Buffer{Addr: 5 << 28, Size: w}
	}
	return a
}

// reducePolicyCase is a plan and operands of the policy's decision table,
// with the launches expected on each of some devices (launchString).
type reducePolicyCase struct {
	name      string
	desc      ReduceDesc
	transpose bool  // column-major operands
	offset    int64 // elements past an aligned base
	devs      []policyDev
}

func (c *reducePolicyCase) args(p *ReduceBackward) *ReduceArgs {
	if !c.transpose && c.offset == 0 {
		return nil
	}
	return reduceOperands(p, c.transpose, c.offset)
}

// reducePolicyCases: representative plans by reducePolicy's rows.
var reducePolicyCases = func() []reducePolicyCase {
	type dev = policyDev
	all := onV100A100H100
	big := []int{8192, 4096}
	return []reducePolicyCase{
		{name: "short, packed inner form", desc: ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{1 << 16, 8}, Axis: 1},
			devs: all("sum_f32_inner 128x256")},
		{name: "short, outer form", desc: ReduceDesc{Op: ReduceMax, DType: dtype.BF16, Shape: []int{1024, 8, 64}, Axis: 1},
			devs: all("max_bf16_short 64x256")},
		{name: "stripc on 9.0, one where x exceeds L2, else two passes", desc: ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: big},
			devs: []dev{{factsV100, "var_f32_stats 640x256, var_f32_apply/p1 512x256, var_f32_apply/rev 640x256"},
				{factsA100, "memset132@1441792=0, var_f32_one 108x256+97792"}, {factsH100, "var_f32_stripc 1024x256+135168"}}},
		{name: "stripc on 9.0, else flat and fix", desc: ReduceDesc{Op: ReduceMax, DType: dtype.BF16, Shape: big},
			devs: []dev{{factsV100, "memset16388=0, max_bf16_flat 16384x256, max_bf16_fix/p2 640x256"},
				{factsA100, "memset16388=0, max_bf16_flat 16384x256, max_bf16_fix/p2 864x256"},
				{factsH100, "max_bf16_stripc 512x256+135168"}}},
		{name: "flat", desc: ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{4096, 8192}},
			devs: all("sum_f32_flat 32768x256")},
		{name: "flat and fix over few slices, grids of resident blocks", desc: ReduceDesc{Op: ReduceMax, DType: dtype.F32, Shape: []int{16, 1 << 20}, Axis: 1},
			devs: []dev{{factsT4, "memset68=0, max_f32_flat 160x256, max_f32_fix/p2 160x256"},
				{factsV100, "memset68=0, max_f32_flat 640x256, max_f32_fix/p2 640x256"},
				{factsH100, "memset68=0, max_f32_flat 1056x256, max_f32_fix/p2 1056x256"},
				{factsH100PCIe, "memset68=0, max_f32_flat 912x256, max_f32_fix/p2 912x256"}}},
		{name: "flat statistics, apply pass reversed", desc: ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: []int{16, 1 << 20}, Axis: 1},
			devs: all("var_f32_flat/p2 1024x256, var_f32_flat/rev 1024x256")},
		{name: "stats and apply for strided operands", desc: ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: []int{16, 1 << 20}, Axis: 1},
			transpose: true, devs: []dev{{factsV100, "var_f32_stats 640x256, var_f32_apply/p1 2x256, var_f32_apply/rev 640x256"},
				{factsH100, "var_f32_stats 1024x256, var_f32_apply/p1 2x256, var_f32_apply/rev 1024x256"}}},
		{name: "cluster on 9.0 for unaligned operands", desc: ReduceDesc{Op: ReduceMax, DType: dtype.F32, Shape: big}, offset: 1,
			devs: []dev{{factsV100, "max_f32_stats 640x256, max_f32_apply/p1 512x256, max_f32_apply/rev 640x256"},
				{factsA100, "max_f32_stats 864x256, max_f32_apply/p1 512x256, max_f32_apply/rev 864x256"},
				{factsH100, "max_f32_cluster 1024x256"}}},
		{name: "one for unaligned operands where x exceeds L2", desc: ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: big}, offset: 1,
			devs: []dev{{factsV100, "var_f32_stats 640x256, var_f32_apply/p1 512x256, var_f32_apply/rev 640x256"},
				{factsA100, "memset516@1441792=0, var_f32_one 108x256+24448"},
				{factsH100, "memset516@1441792=0, var_f32_one 264x256+24448"},
				{factsH100PCIe, "memset516@1441792=0, var_f32_one 228x256+24448"}}},
		{name: "row for unaligned operands", desc: ReduceDesc{Op: ReduceLogSumExp, DType: dtype.BF16, Shape: []int{4096, 1000}, Axis: 1},
			offset: 1, devs: []dev{{factsT4, "logsumexp_bf16_row 160x256"}, {factsV100, "logsumexp_bf16_row 512x256"},
				{factsH100, "logsumexp_bf16_row 512x256"}}},
		{name: "seg with its statistics pass, segc on 9.0", desc: ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: []int{64, 128, 32}, Axes: []int{0, 2}},
			devs: []dev{{factsV100, "var_f32_seg/p3 128x256, var_f32_seg 128x256"}, {factsA100, "var_f32_seg/p3 128x256, var_f32_seg 128x256"},
				{factsH100, "var_f32_segc 1024x256+1024"}}},
		{name: "seg", desc: ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{64, 128, 32}, Axes: []int{0, 2}},
			devs: all("sum_f32_seg 128x256")},
		{name: "several axes as one on the coalesced view", desc: ReduceDesc{Op: ReduceMean, DType: dtype.F32, Shape: []int{8, 16, 4096}, Axes: []int{0, 1}},
			devs: all("mean_f32_flat 512x256")},
	}
}()

// TestReducePolicyTable: the launches of representative plans on each
// device, as a decision table (reducePolicy's rows).
func TestReducePolicyTable(t *testing.T) {
	for _, c := range reducePolicyCases {
		p, err := NewReduceBackward(c.desc)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		plan := fmt.Sprintf("%s (%s %s %v axis %d axes %v)", c.name, c.desc.Op, c.desc.DType, c.desc.Shape, c.desc.Axis, c.desc.Axes)
		checkPolicyDevs(t, plan, p.Launches, c.args(p), c.devs)
	}
}

// TestReduceLaunchesEdges: an empty tensor launches nothing; facts below
// compute capability 7.0 are an error; operands Check rejects are Check's
// error.
func TestReduceLaunchesEdges(t *testing.T) {
	empty, err := NewReduceBackward(ReduceDesc{Op: ReduceSum, DType: dtype.F32, Shape: []int{0, 5}, Axis: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewReduceBackward(ReduceDesc{Op: ReduceVar, DType: dtype.F32, Shape: []int{64, 128, 32}, Axes: []int{0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	a := reduceOperands(p, false, 0)
	a.DX.Buf.Size = 16
	checkLaunchesEdges(t, empty.Launches, p.Launches, a)
}

// TestReduceLaunchesInvariants: over ops, dtypes, shapes, axis sets,
// operand layouts and devices, every kernel Launches names is one Warm
// loads (kernelRefs), with redBlock threads; grids fit; memsets lie in the
// workspace; and with contiguous operands on compute capability 7.0 a Run
// launches the kernel Kernel() names, but where Kernel() names one that
// the device's build or its L2 cache and occupancy decide (stripc, segc,
// cluster, one).
func TestReduceLaunchesInvariants(t *testing.T) {
	shapes := []struct {
		shape []int
		axis  int
		axes  []int
	}{
		{[]int{1}, 0, nil}, {[]int{33}, 0, nil}, {[]int{3, 7}, 1, nil}, {[]int{1 << 16, 8}, 1, nil}, {[]int{8, 1 << 16}, 0, nil},
		{[]int{5, 3000}, 1, nil}, {[]int{2, 70000}, 1, nil}, {[]int{3000, 5}, 0, nil}, {[]int{4096, 2, 3}, 0, nil},
		{[]int{700, 96}, 0, nil}, {[]int{9000, 256}, 0, nil}, {[]int{40, 8, 32}, 1, nil}, {[]int{16, 1 << 18}, 1, nil},
		{[]int{4, 16, 32, 32}, 0, []int{0, 2, 3}}, {[]int{64, 128, 32}, 0, []int{0, 2}}, {[]int{8, 16, 4096}, 0, []int{0, 1}},
	}
	for _, op := range ReduceOps() {
		for _, dt := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16, dtype.F64} {
			for _, s := range shapes {
				p, err := NewReduceBackward(ReduceDesc{Op: op, DType: dt, Shape: s.shape, Axis: s.axis, Axes: s.axes})
				if err != nil {
					t.Fatal(err)
				}
				refs := p.kernelRefs()
				for _, layout := range []struct {
					transpose bool
					offset    int64
				}{{false, 0}, {false, 1}, {true, 0}} {
					a := reduceOperands(p, layout.transpose, layout.offset)
					for _, dev := range []DeviceFacts{factsV100, factsT4, factsA100, factsH100, factsH100PCIe} {
						ls, err := p.Launches(dev, a)
						if errors.Is(err, ErrLayout) {
							continue // a seg plan takes contiguous operands only
						}
						if err != nil {
							t.Fatal(err)
						}
						name := fmt.Sprintf("%s %s %v axis %d axes %v %+v on %d.%d/%d SMs: %s", op, dt, s.shape, s.axis, s.axes,
							layout, dev.Major, dev.Minor, dev.SMs, launchString(ls))
						base := dev.Major == 7 && dev.Minor == 0 && !layout.transpose && layout.offset == 0
						checkReduceLaunches(t, name, p, refs, ls, base)
					}
				}
			}
		}
	}
}

func checkReduceLaunches(t *testing.T, name string, p *ReduceBackward, refs []*kernelRef, ls []LaunchInfo, base bool) {
	t.Helper()
	if len(ls) == 0 {
		t.Errorf("%s: no launches", name)
		return
	}
	for _, l := range ls {
		if l.Kernel == "" {
			if l.MemsetOffset < 0 || l.Memset < 1 || l.MemsetOffset+l.Memset > p.WorkspaceSize() || l.MemsetByte != 0 {
				t.Errorf("%s: memset of [%d, +%d) of a workspace of %d", name, l.MemsetOffset, l.Memset, p.WorkspaceSize())
			}
			continue
		}
		if !slices.ContainsFunc(refs, func(k *kernelRef) bool { return k.name == l.Kernel }) {
			t.Errorf("%s: launches %s, which Warm does not load", name, l.Kernel)
		}
		if l.Block != redBlock || l.Grid < 1 || l.Grid > maxGridX {
			t.Errorf("%s: %s launched %dx%d", name, l.Kernel, l.Grid, l.Block)
		}
	}
	if !base {
		return
	}
	want := p.Kernel().Name
	if !slices.ContainsFunc(ls, func(l LaunchInfo) bool { return l.Kernel == want }) &&
		!slices.ContainsFunc([]string{"_stripc", "_segc", "_cluster", "_one"}, func(s string) bool { return strings.HasSuffix(want, s) }) {
		t.Errorf("%s: Kernel() names %s", name, want)
	}
}
