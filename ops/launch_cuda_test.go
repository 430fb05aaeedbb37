//go:build cuda

package ops

import (
	"errors"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// deviceContext is the primary context of GPU 0.
func deviceContext(tb testing.TB) *driver.Context {
	tb.Helper()
	if err := driver.Load(); err != nil {
		tb.Fatal(err)
	}
	dev, err := driver.GetDevice(0)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, err := dev.Context()
	if err != nil {
		tb.Fatal(err)
	}
	return ctx
}

// BenchmarkLaunchOnly times Function.Launch of the binary mul kernel with a
// pre-packed argument block: the driver's own cost, to set against
// BenchmarkRunHost (validation + packing + launch) in ops_test.
func BenchmarkLaunchOnly(b *testing.B) {
	ctx := deviceContext(b)
	s, err := ctx.NewStream()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Destroy()
	buf, err := ctx.Alloc(5 * 1024 * 4)
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Free(buf)
	p, err := NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: []int{1024}})
	if err != nil {
		b.Fatal(err)
	}
	lf, err := p.kernel.resolve(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var ts [5]*Tensor
	for i := range ts {
		t := NewTensor(buf.Slice(int64(i)*4096, 4096), dtype.F32, 1024)
		ts[i] = &t
	}
	L := binaryLayout{n: 1024, rank: 1, mode: modeVector, dim: [MaxRank]int64{1024}}
	args := driver.GetArgs()
	defer driver.PutArgs(args)
	p.pack(args, &ts, &L)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := lf.fn.Launch(s, [3]uint32{1, 1, 1}, [3]uint32{256, 1, 1}, 0, args); err != nil {
			b.Fatal(err)
		}
		if i%1024 == 1023 {
			b.StopTimer()
			if err := s.Synchronize(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
}

// TestReduceClusterBuild: the plan of a split col slice of prod (the
// cluster ops but f64) has the cluster geometry, and its kernel resolves
// exactly where the device has compute capability 9.0 or more (from the
// compute_90 build), else reports errNoBuild (and Run takes the two
// passes); an op outside clusterOp has no cluster geometry.
func TestReduceClusterBuild(t *testing.T) {
	ctx := deviceContext(t)
	major, _, err := ctx.Device().ComputeCapability()
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16, dtype.F16} {
		p, err := NewReduceBackward(ReduceDesc{Op: ReduceProd, DType: dt, Shape: []int{4096, 4096}, Axis: 0})
		if err != nil {
			t.Fatal(err)
		}
		if p.clu.nchunks != redCluster || p.clu.chunk != 4096/redCluster || p.clu.group != redClusterH {
			t.Errorf("%s: cluster geometry %+v, want %d chunks of %d", dt, p.clu, redCluster, 4096/redCluster)
		}
		_, err = p.cluK.resolve(ctx)
		switch {
		case major >= 9 && err != nil:
			t.Errorf("%s: compute capability %d: cluster kernel: %v", dt, major, err)
		case major < 9 && err != errNoBuild:
			t.Errorf("%s: compute capability %d: cluster kernel resolves (%v), want errNoBuild", dt, major, err)
		}
	}
	p, err := NewReduceBackward(ReduceDesc{Op: ReduceMax, DType: dtype.BF16, Shape: []int{4096, 4096}, Axis: 0})
	if err != nil {
		t.Fatal(err)
	}
	if p.clu.nchunks != 0 {
		t.Errorf("max bf16: cluster geometry %+v, want none", p.clu)
	}
}

// TestScanStripTaken: on a GPU of compute capability 8.0 and up whose
// shared memory holds the kernel, Run takes the colstrip kernel by itself
// for f16 and bf16 cummax along axis 0 of 600x4096 where its 128 strips
// fill the GPU, with no workspace touched (it has none to fill), and that
// a warm Run of it allocates nothing.
func TestScanStripTaken(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F16, dtype.BF16} {
		t.Run(dt.Suffix(), func(t *testing.T) { scanStripTaken(t, dt) })
	}
}

func scanStripTaken(t *testing.T, dt dtype.DType) {
	ctx := deviceContext(t)
	shape := []int{600, 4096}
	p, err := NewScanBackward(ScanDesc{Op: ScanCummax, DType: dt, Shape: shape})
	if err != nil {
		t.Fatal(err)
	}
	if p.stripK == nil {
		t.Fatal("no colstrip kernel in the plan")
	}
	lf, err := p.stripK.resolve(ctx)
	if errors.Is(err, errNoBuild) {
		t.Skip("no compute_80 build for this GPU")
	}
	if err != nil {
		t.Fatal(err)
	}
	if lf.smemBlocksPerSM == 0 {
		t.Skipf("%d bytes of shared memory do not fit a block on this GPU", p.stripK.smem)
	}
	if !stripFills(128, lf.sms, lf.smemBlocksPerSM) {
		t.Skipf("128 strips do not fill %d SMs", lf.sms)
	}
	stream, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Destroy()
	n := int64(600 * 4096 * 2)
	var bufs []driver.Buffer
	defer func() {
		for _, b := range bufs {
			ctx.Free(b)
		}
	}()
	alloc := func(n int64, v byte) driver.Buffer {
		b, err := ctx.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
		if err := ctx.Memset8(b, v); err != nil {
			t.Fatal(err)
		}
		return b
	}
	// The workspace holds a pattern that any other kernel's Run would
	// overwrite (the 16-byte memset of its ticket counter at least).
	ws := alloc(p.WorkspaceSize(), 0x5a)
	a := ScanArgs{DY: NewTensor(alloc(n, 0x3f), dt, shape...), X: NewTensor(alloc(n, 0x3f), dt, shape...),
		DX: NewTensor(alloc(n, 0), dt, shape...), Workspace: ws}
	if err := p.Run(stream, &a); err != nil {
		t.Fatal(err)
	}
	if err := stream.Synchronize(); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 64)
	if err := ctx.CopyDtoH(head, ws.Slice(0, 64)); err != nil {
		t.Fatal(err)
	}
	for i, b := range head {
		if b != 0x5a {
			t.Fatalf("workspace byte %d is %#x after Run: a chunked kernel ran, not colstrip", i, b)
		}
	}
	// A warm Run of it allocates nothing on the Go heap either.
	var runErr error
	allocs := testing.AllocsPerRun(20, func() {
		if err := p.Run(stream, &a); err != nil {
			runErr = err
		}
	})
	if runErr != nil {
		t.Fatal(runErr)
	}
	if err := stream.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("%.1f allocations per warm Run, want 0", allocs)
	}
}
