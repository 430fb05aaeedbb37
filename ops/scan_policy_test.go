package ops

import (
	"fmt"
	"slices"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// Tests of the scan launch policy (scan_policy.go) without a GPU: the
// launches Launches reports for shapes, dtypes, ops, operand layouts and
// devices, and what holds for every plan.

// scanOperands are operands of p's shape with the given strides (nil:
// contiguous), each base offset elements past a 256-byte aligned address
// in a buffer of its own, and a workspace where the plan needs one.
func scanOperands(p *ScanBackward, strides []int, offset int64) *ScanArgs {
	size := int64(p.desc.DType.Size())
	t := Tensor{DType: p.desc.DType, Shape: p.shape, Strides: strides}
	span := int64(1)
	for d := range p.shape {
		span += int64(p.shape[d]-1) * t.strideOf(d)
	}
	region := ((span+offset)*size + 255) &^ 255
	mk := func(i int64) Tensor {
		t.Buf = driver.Buffer{Addr: driver.DevicePtr(0x100000 + i*region + offset*size), Size: span * size}
		return t
	}
	a := &ScanArgs{DY: mk(0), X: mk(1), Y: mk(2), DX: mk(3)}
	if w := p.WorkspaceSize(); w > 0 {
		a.Workspace = driver.Buffer{Addr: driver.DevicePtr(0x100000 + 4*region), Size: w}
	}
	return a
}

// scanPolicyCase is a plan and operands of the policy's decision table,
// with the launches expected on each of some devices.
type scanPolicyCase struct {
	name    string
	desc    ScanDesc
	strides []int // nil: contiguous operands
	offset  int64 // elements past a 256-byte aligned base
	devs    []policyDev
}

// args are the case's operands: nil for contiguous ones (as Launches
// takes them).
func (c *scanPolicyCase) args(p *ScanBackward) *ScanArgs {
	if c.strides == nil && c.offset == 0 {
		return nil
	}
	return scanOperands(p, c.strides, c.offset)
}

// scanPolicyCases: representative plans by scanPolicy's rows.
var scanPolicyCases = func() []scanPolicyCase {
	type dev = policyDev
	all := onV100A100H100
	return []scanPolicyCase{
		{name: "short, inner form", desc: ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{1 << 15, 16}, Axis: 1},
			devs: all("cumsum_f32_short 256x128+8704")},
		{name: "short, outer form (transposed operands)", desc: ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{1 << 15, 16}, Axis: 1},
			strides: []int{1, 1 << 15}, devs: all("cumsum_f32_short 256x128+8704")},
		{name: "short, staged only where 75 KiB fit", desc: ScanDesc{Op: ScanCumprod, DType: dtype.F64, Shape: []int{1 << 15, 24}, Axis: 1},
			devs: []dev{{factsT4, "cumprod_f64_short 256x128"}, {factsV100, "cumprod_f64_short 256x128+76800"},
				{factsH100, "cumprod_f64_short 256x128+76800"}}},
		{name: "row, one tile", desc: ScanDesc{Op: ScanLogcumsumexp, DType: dtype.BF16, Shape: []int{64, 1000}, Axis: 1},
			devs: all("logcumsumexp_bf16_row 16x256")},
		{name: "row, tiles: memset and fill blocks", desc: ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{8, 100000}, Axis: 1},
			devs: all("memset16=ff, cumsum_f32_row 201x256")},
		{name: "row, tiles: forward-state passes", desc: ScanDesc{Op: ScanCumprod, DType: dtype.F32, Shape: []int{8, 100000}, Axis: 1},
			devs: all("cumprod_f32_row/p1 200x256, cumprod_f32_row/p2 1x256, cumprod_f32_row 200x256")},
		{name: "col, ext order, fix blocks in the main launch", desc: ScanDesc{Op: ScanCummax, DType: dtype.F32, Shape: []int{4096, 64}},
			devs: all("memset16=ff, cummax_f32_col 42x256")},
		{name: "col, ext order, f64 fix pass", desc: ScanDesc{Op: ScanCummax, DType: dtype.F64, Shape: []int{4096, 64}},
			devs: all("memset16=ff, cummax_f64_col 69x256, cummax_f64_col/p4 8x256")},
		{name: "colstrip where one wave fills, colpair on 8.0+", desc: ScanDesc{Op: ScanCummax, DType: dtype.BF16, Shape: []int{8192, 4096}},
			devs: []dev{{factsV100, "memset16=ff, cummax_bf16_col 7296x256"}, {factsA100, "memset16=ff, cummax_bf16_colpair 3648x256"},
				{factsH100, "cummax_bf16_colstrip 128x512+135296"}, {factsH100PCIe, "memset16=ff, cummax_bf16_colpair 3648x256"}}},
		{name: "colstrip, no colpair for f16", desc: ScanDesc{Op: ScanCummin, DType: dtype.F16, Shape: []int{8192, 4096}},
			devs: []dev{{factsV100, "memset16=ff, cummin_f16_col 4736x256"}, {factsA100, "memset16=ff, cummin_f16_col 4736x256"},
				{factsH100, "cummin_f16_colstrip 128x512+135296"}, {factsH100PCIe, "memset16=ff, cummin_f16_col 4736x256"}}},
		{name: "colpair without 16-byte rows", desc: ScanDesc{Op: ScanCummax, DType: dtype.BF16, Shape: []int{8192, 4096}},
			offset: 2, devs: []dev{{factsV100, "memset16=ff, cummax_bf16_col 7296x256"}, {factsH100, "memset16=ff, cummax_bf16_colpair 3648x256"}}},
		{name: "col without 4-byte words", desc: ScanDesc{Op: ScanCummax, DType: dtype.BF16, Shape: []int{8192, 4096}},
			offset: 1, devs: all("memset16=ff, cummax_bf16_col 7296x256")},
		{name: "col for an odd number of slices", desc: ScanDesc{Op: ScanCummax, DType: dtype.BF16, Shape: []int{8192, 4095}},
			devs: all("memset16=ff, cummax_bf16_col 7296x256")},
		{name: "tallrow", desc: ScanDesc{Op: ScanCumsum, DType: dtype.BF16, Shape: []int{65536, 4}},
			devs: all("memset16=ff, cumsum_bf16_tallrow 33x256")},
		{name: "tallrow, forward-state passes", desc: ScanDesc{Op: ScanCummax, DType: dtype.BF16, Shape: []int{65536, 4}},
			devs: all("cummax_bf16_tallrow/p1 32x256, cummax_bf16_tallrow/p2 1x256, cummax_bf16_tallrow 32x256")},
		{name: "tallrow, f32 cumprod", desc: ScanDesc{Op: ScanCumprod, DType: dtype.F32, Shape: []int{65536, 4}},
			devs: all("cumprod_f32_tallrow/p1 64x256, cumprod_f32_tallrow/p2 1x256, cumprod_f32_tallrow 64x256")},
		{name: "tall over 4 columns where tallrow is not built", desc: ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{65536, 4}},
			devs: all("memset16=ff, cumsum_f32_tall 33x256+33792")},
		{name: "tallrow without 16-byte packs", desc: ScanDesc{Op: ScanCumsum, DType: dtype.BF16, Shape: []int{65536, 4}},
			offset: 1, devs: all("memset16=ff, cumsum_bf16_tallrow 33x256")},
		{name: "tall", desc: ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{65536, 8}},
			devs: all("memset16=ff, cumsum_f32_tall 65x256+33280")},
		{name: "tall, forward-state passes", desc: ScanDesc{Op: ScanCummax, DType: dtype.F32, Shape: []int{65536, 8}},
			devs: all("cummax_f32_tall/p1 103x256+41984, cummax_f32_tall/p2 1x256+41984, cummax_f32_tall 103x256+41984")},
		{name: "row, look-back over a few long slices", desc: ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{4, 1 << 22}, Axis: 1},
			devs: all("memset16=ff, cumsum_f32_row 4098x256")},
		{name: "tallrow, carry passes", desc: ScanDesc{Op: ScanLogcumsumexp, DType: dtype.BF16, Shape: []int{1 << 20, 4}},
			devs: all("logcumsumexp_bf16_tallrow/p8 1024x256, logcumsumexp_bf16_tallrow/p16 4x256, logcumsumexp_bf16_tallrow/p32 1024x256")},
		{name: "tallrow, no carry passes over many slices", desc: ScanDesc{Op: ScanCumsum, DType: dtype.BF16, Shape: []int{8, 1 << 20, 4}, Axis: 1},
			devs: all("memset16=ff, cumsum_bf16_tallrow 4104x256")},
		{name: "tallrow, no carry passes with a forward state", desc: ScanDesc{Op: ScanCummax, DType: dtype.BF16, Shape: []int{1 << 20, 4}},
			devs: all("cummax_bf16_tallrow/p1 512x256, cummax_bf16_tallrow/p2 4x256, cummax_bf16_tallrow 512x256")},
		{name: "col for tall operands with padded rows", desc: ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{65536, 4}},
			strides: []int{8, 1}, devs: all("memset16=ff, cumsum_f32_col 257x256")},
	}
}()

// TestScanPolicyTable: the launches of representative plans on each
// device, as a decision table (scanPolicy's rows).
func TestScanPolicyTable(t *testing.T) {
	for _, c := range scanPolicyCases {
		p, err := NewScanBackward(c.desc)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		plan := fmt.Sprintf("%s (%s %s %v axis %d)", c.name, c.desc.Op, c.desc.DType, c.desc.Shape, c.desc.Axis)
		checkPolicyDevs(t, plan, p.Launches, c.args(p), c.devs)
	}
}

// TestScanCarryPolicy: BARACUDA_SCAN_CARRY=always gives every chunked
// tallrow launch the carry passes, after the forward-state passes where
// the op has them, and no memset; never keeps the look-back; the row,
// tall and col kernels never take them.
func TestScanCarryPolicy(t *testing.T) {
	cases := []struct {
		env  string
		desc ScanDesc
		want string
	}{
		{"always", ScanDesc{Op: ScanCumsum, DType: dtype.BF16, Shape: []int{100000, 4}},
			"cumsum_bf16_tallrow/p8 49x256, cumsum_bf16_tallrow/p16 4x256, cumsum_bf16_tallrow/p32 49x256"},
		{"always", ScanDesc{Op: ScanCumprod, DType: dtype.BF16, Shape: []int{1 << 20, 4}},
			"cumprod_bf16_tallrow/p1 1024x256, cumprod_bf16_tallrow/p2 4x256, cumprod_bf16_tallrow/p8 1024x256, cumprod_bf16_tallrow/p16 4x256, cumprod_bf16_tallrow/p32 1024x256"},
		{"always", ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{8, 100000}, Axis: 1},
			"memset16=ff, cumsum_f32_row 201x256"},
		{"always", ScanDesc{Op: ScanCummax, DType: dtype.F32, Shape: []int{1 << 20, 8}},
			"cummax_f32_tall/p1 1639x256+41984, cummax_f32_tall/p2 8x256+41984, cummax_f32_tall 1639x256+41984"},
		{"always", ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{1000, 64}},
			"memset16=ff, cumsum_f32_col 9x256"},
		{"never", ScanDesc{Op: ScanLogcumsumexp, DType: dtype.BF16, Shape: []int{1 << 20, 4}},
			"memset16=ff, logcumsumexp_bf16_tallrow 1027x256"},
	}
	for _, c := range cases {
		t.Setenv(scanCarryEnv, c.env)
		p, err := NewScanBackward(c.desc)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := p.Launches(factsH100, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := launchString(ls); got != c.want {
			t.Errorf("%s=%s, %s %s %v axis %d: launches %s, want %s", scanCarryEnv, c.env, c.desc.Op, c.desc.DType,
				c.desc.Shape, c.desc.Axis, got, c.want)
		}
	}
}

// TestScanLaunchesEdges: an empty tensor launches nothing; facts below
// compute capability 7.0 are an error, as loading a kernel there is;
// operands Check rejects are Check's error.
func TestScanLaunchesEdges(t *testing.T) {
	empty, err := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{0, 5}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.F32, Shape: []int{1 << 15, 16}, Axis: 1})
	if err != nil {
		t.Fatal(err)
	}
	a := scanOperands(p, nil, 0)
	a.DX.Buf.Size = 16
	checkLaunchesEdges(t, empty.Launches, p.Launches, a)
}

// TestScanLaunchesInvariants: over ops, dtypes, shapes and devices, every
// kernel Launches names is one Warm loads (kernelRefs) with its table's
// block where it sets one; grids fit; a memset comes first and only where
// the plan has a workspace; the last launch is the main pass (of the
// look-back or of the carry passes) or the f64 fix pass; and with
// contiguous operands on compute capability 7.0 (no compute_80 builds)
// every launch is of the kernel Kernel() names. Under the default policy
// and with the carry passes wherever they apply (scanCarryEnv "always").
func TestScanLaunchesInvariants(t *testing.T) {
	shapes := []shapeAxis{
		{[]int{1}, 0}, {[]int{33}, 0}, {[]int{3, 7}, 1}, {[]int{1 << 14, 8}, 1}, {[]int{1 << 14, 8}, 0},
		{[]int{5, 3000}, 1}, {[]int{2, 70000}, 1}, {[]int{3000, 5}, 0}, {[]int{4096, 2, 3}, 0},
		{[]int{2, 5000, 3}, 1}, {[]int{700, 96}, 0}, {[]int{9000, 256}, 0}, {[]int{40, 8, 32}, 1},
		{[]int{1 << 21}, 0}, {[]int{1 << 20, 4}, 0}, {[]int{1 << 20, 6}, 0},
	}
	for _, env := range []string{"", "always"} {
		t.Setenv(scanCarryEnv, env)
		checkScanInvariants(t, shapes)
	}
}

// shapeAxis is a shape and an axis of it.
type shapeAxis struct {
	shape []int
	axis  int
}

func checkScanInvariants(t *testing.T, shapes []shapeAxis) {
	for _, op := range ScanOps() {
		for _, dt := range []dtype.DType{dtype.F32, dtype.F16, dtype.BF16, dtype.F64} {
			for _, s := range shapes {
				p, err := NewScanBackward(ScanDesc{Op: op, DType: dt, Shape: s.shape, Axis: s.axis})
				if err != nil {
					t.Fatal(err)
				}
				refs := p.kernelRefs()
				for _, dev := range []DeviceFacts{factsV100, factsT4, factsA100, factsH100, factsH100PCIe} {
					ls, err := p.Launches(dev, nil)
					if err != nil {
						t.Fatal(err)
					}
					name := fmt.Sprintf("%s %s %v axis %d on %d.%d/%d SMs: %s", op, dt, s.shape, s.axis,
						dev.Major, dev.Minor, dev.SMs, launchString(ls))
					checkScanLaunches(t, name, p, refs, ls, dev.Major == 7 && dev.Minor == 0)
				}
			}
		}
	}
}

func checkScanLaunches(t *testing.T, name string, p *ScanBackward, refs []*kernelRef, ls []LaunchInfo, base bool) {
	t.Helper()
	if len(ls) == 0 {
		t.Errorf("%s: no launches", name)
		return
	}
	for i, l := range ls {
		if l.Kernel == "" {
			if i != 0 || l.Memset != scanCounter || p.WorkspaceSize() == 0 {
				t.Errorf("%s: memset %d at step %d, workspace %d", name, l.Memset, i, p.WorkspaceSize())
			}
			continue
		}
		i := slices.IndexFunc(refs, func(k *kernelRef) bool { return k.name == l.Kernel })
		if i < 0 {
			t.Errorf("%s: launches %s, which Warm does not load", name, l.Kernel)
			continue
		}
		if k := refs[i]; k.row.block != 0 && l.Block != k.row.block || l.Grid < 1 || l.Grid > maxGridX {
			t.Errorf("%s: %s launched %dx%d", name, l.Kernel, l.Grid, l.Block)
		}
		if base && l.Kernel != p.Kernel().Name {
			t.Errorf("%s: launches %s, Kernel() names %s", name, l.Kernel, p.Kernel().Name)
		}
	}
	if last := ls[len(ls)-1]; last.Phase != scanMain && last.Phase != scanExtFix && last.Phase != scanCarryApply {
		t.Errorf("%s: ends with phase %d", name, last.Phase)
	}
}
