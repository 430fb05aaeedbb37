package ops

import (
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
)

// Tests of the tallrow form's plan side (scan_tallrow.go): the policy and
// its knob, the geometry, and a model of the kernel's index math
// (gen/scan_tallrow.cuh).

// tallRowBuilt is where the spec builds the tallrow kernel (gen/spec_scan.go):
// every op in the 16-bit types, cumprod and logcumsumexp in f32 and f64.
func tallRowBuilt(op ScanOp, dt dtype.DType) bool {
	return dt.Size() == 2 || op == ScanCumprod || op == ScanLogcumsumexp
}

// TestScanTallRowPolicy: plans take the tallrow kernel where the tall
// mapping's policy applies over 4 columns and the kernel is built, the tall
// kernel for other widths and where it is not built, and
// BARACUDA_SCAN_TALLROW and BARACUDA_SCAN_TALL override.
func TestScanTallRowPolicy(t *testing.T) {
	for _, op := range ScanOps() {
		for _, dt := range dtype.All {
			if _, ok := lookupKernel("scan", op.String(), dt, "tallrow"); ok != tallRowBuilt(op, dt) {
				t.Errorf("%s %s: tallrow kernel built %v, want %v", op, dt, ok, tallRowBuilt(op, dt))
			}
		}
	}
	cases := []struct {
		shape      []int
		axis       int
		row, tall  bool
		wantKernel string
	}{
		{[]int{4194304, 4}, 0, true, true, "_tallrow"},
		{[]int{4096, 4}, 0, true, true, "_tallrow"},
		{[]int{4096, 2, 2}, 0, true, true, "_tallrow"}, // inner dims of 4
		{[]int{4, 100003, 4}, 1, true, true, "_tallrow"},
		{[]int{4095, 4}, 0, false, false, "_col"}, // short axis
		{[]int{4194304, 3}, 0, false, true, "_tall"},
		{[]int{4194304, 8}, 0, false, true, "_tall"},
		{[]int{4194304, 2}, 0, false, true, "_tall"},
		{[]int{32, 100003, 4}, 1, false, false, "_col"}, // 128 slices
		{[]int{4, 4194304}, 1, false, false, "_row"},    // innermost axis
	}
	for _, c := range cases {
		for _, op := range ScanOps() {
			for _, dt := range dtype.All {
				p, err := NewScanBackward(ScanDesc{Op: op, DType: dt, Shape: c.shape, Axis: c.axis})
				if err != nil {
					t.Fatal(err)
				}
				row, want := c.row && tallRowBuilt(op, dt), c.wantKernel
				if c.row && !row {
					want = "_tall"
				}
				if got := p.trowK != nil; got != row {
					t.Errorf("%s %s %v axis %d: tallrow %v, want %v", op, dt, c.shape, c.axis, got, row)
				}
				if got := p.tallK != nil; got != c.tall {
					t.Errorf("%s %s %v axis %d: tall %v, want %v", op, dt, c.shape, c.axis, got, c.tall)
				}
				if name := p.Kernel().Name; !strings.HasSuffix(name, want) {
					t.Errorf("%s %s %v axis %d: Kernel() %s, want %s", op, dt, c.shape, c.axis, name, want)
				}
				if p.trowG != nil && (p.WorkspaceSize() < p.trowG.ws.size || p.WorkspaceSize() < p.tallG.ws.size) {
					t.Errorf("%s %s %v: WorkspaceSize %d < tallrow's %d or tall's %d", op, dt, c.shape,
						p.WorkspaceSize(), p.trowG.ws.size, p.tallG.ws.size)
				}
			}
		}
	}
	t.Setenv(scanTallRowEnv, "never")
	if p, _ := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.BF16, Shape: []int{4194304, 4}}); p.trowK != nil ||
		p.tallK == nil {
		t.Errorf("%s=never: tallrow %v, tall %v", scanTallRowEnv, p.trowK != nil, p.tallK != nil)
	}
	t.Setenv(scanTallRowEnv, "always")
	for _, c := range []struct {
		shape []int
		axis  int
	}{{[]int{1, 4}, 0}, {[]int{33, 4}, 0}, {[]int{64, 2, 2}, 0}, {[]int{40, 7, 4}, 1}} {
		p, _ := NewScanBackward(ScanDesc{Op: ScanCumprod, DType: dtype.F64, Shape: c.shape, Axis: c.axis})
		if p.trowK == nil {
			t.Errorf("%s=always %v axis %d: no tallrow kernel", scanTallRowEnv, c.shape, c.axis)
		}
	}
	for _, shape := range [][]int{{33, 3}, {33, 8}, {4, 33}} {
		if p, _ := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.BF16, Shape: shape}); p.trowK != nil {
			t.Errorf("%s=always %v: tallrow kernel", scanTallRowEnv, shape)
		}
	}
	t.Setenv(scanTallEnv, "never")
	if p, _ := NewScanBackward(ScanDesc{Op: ScanCumsum, DType: dtype.BF16, Shape: []int{4194304, 4}}); p.trowK != nil {
		t.Errorf("%s=never: tallrow kernel", scanTallEnv)
	}
}

// TestScanTallRowGeometry: a run is the row mapping's elements in whole
// rows (TallRowItems), and the tiles, blocks and units follow.
func TestScanTallRowGeometry(t *testing.T) {
	for _, op := range ScanOps() {
		for _, dt := range dtype.All {
			row, _ := scanItems(op, dt)
			items := tallRowItems(op, dt)
			if items < 1 || items*scanTallRowK != row {
				t.Errorf("%s %s: %d rows a run of %d columns, the row mapping's run is %d", op, dt, items, scanTallRowK, row)
			}
			if items*scanTallRowK*int64(dt.Size())%16 != 0 {
				t.Errorf("%s %s: a run of %d rows is not whole 16-byte packs", op, dt, items)
			}
		}
	}
	cases := []struct {
		op                  ScanOp
		dt                  dtype.DType
		n, outer            int64
		items               int32
		chunks, units, grid int64
	}{
		{ScanCumsum, dtype.F32, 4194304, 1, 4, 4096, 1, 4096},
		{ScanCumsum, dtype.BF16, 4194304, 1, 8, 2048, 1, 2048},
		{ScanCummax, dtype.F32, 4194304, 1, 4, 4096, 1, 4096},
		{ScanCummax, dtype.BF16, 4194304, 1, 8, 2048, 1, 2048},
		{ScanCumprod, dtype.BF16, 4194304, 1, 4, 4096, 1, 4096},
		{ScanLogcumsumexp, dtype.F64, 4194304, 1, 2, 8192, 1, 8192},
		{ScanCumsum, dtype.F32, 5000, 3, 4, 5, 3, 15},
		{ScanCumsum, dtype.F32, 1024, 1, 4, 1, 1, 1},
	}
	for _, c := range cases {
		g := newScanTallRowGeom(c.op, c.dt, c.n, c.outer)
		if !g.tall || g.items != c.items || g.chunks != c.chunks || g.units != c.units || g.nslices != c.outer*scanTallRowK {
			t.Errorf("%+v: tall %v items %d chunks %d units %d slices %d", c, g.tall, g.items, g.chunks, g.units, g.nslices)
		}
		if grid := g.grid - g.fillers; grid != c.grid {
			t.Errorf("%+v: %d tile blocks, want %d", c, grid, c.grid)
		}
		if g.chunks > 1 && (g.ws.size == 0 || g.ws.size < g.ws.fwd) {
			t.Errorf("%+v: workspace %+v", c, g.ws)
		}
		if g.chunks == 1 && g.ws.size != 0 {
			t.Errorf("%+v: one tile with a workspace of %d", c, g.ws.size)
		}
	}
}

// TestScanTallRowIndexModel models the kernel's index math: tile q holds
// rows [q*256*R, ...) of one batch; thread t's run is rows k0 = tk0 + t*R
// on, cnt of them, and element (k0+i)*K + j is row i of column j's run;
// every element of the axis is read once; a full run starts on a 16-byte
// boundary of an aligned operand; y before a run and at a tile's ends
// (the Span factor) are rows of the axis.
func TestScanTallRowIndexModel(t *testing.T) {
	const K = scanTallRowK
	for _, c := range []struct {
		op ScanOp
		dt dtype.DType
		n  int64
	}{
		{ScanCumsum, dtype.F32, 1}, {ScanCumsum, dtype.F32, 1023}, {ScanCumsum, dtype.F32, 1025},
		{ScanCummax, dtype.BF16, 4097}, {ScanLogcumsumexp, dtype.F64, 513}, {ScanCumprod, dtype.F16, 3001},
	} {
		g := newScanTallRowGeom(c.op, c.dt, c.n, 1)
		R := int64(g.items)
		rows := scanBlock * R
		seen := make([]int, c.n*K)
		for q := int64(0); q < g.chunks; q++ {
			tk0 := q * rows
			tk1 := min(tk0+rows, c.n)
			for _, rev := range []bool{false, true} {
				le, kf := tk1-1, tk0-1
				if rev {
					le, kf = tk0, tk1
				}
				if le < 0 || le >= c.n || (kf >= 0 && kf < c.n && (kf == le || kf >= tk0 && kf < tk1)) {
					t.Fatalf("%+v tile %d rev %v: ends %d, %d", c, q, rev, le, kf)
				}
			}
			for tid := int64(0); tid < scanBlock; tid++ {
				k0 := tk0 + tid*R
				cnt := int64(0)
				if k0 < tk1 {
					cnt = min(tk1-k0, R)
				}
				if cnt == R && k0*K*int64(c.dt.Size())%16 != 0 {
					t.Fatalf("%+v: run at row %d not 16-byte aligned", c, k0)
				}
				for i := int64(0); i < cnt; i++ {
					for j := int64(0); j < K; j++ {
						seen[(k0+i)*K+j]++
					}
				}
				if cnt > 0 && k0+cnt > c.n {
					t.Fatalf("%+v: run at row %d of %d rows past the axis", c, k0, cnt)
				}
			}
		}
		for e, v := range seen {
			if v != 1 {
				t.Fatalf("%+v: element %d read %d times", c, e, v)
			}
		}
	}
}
