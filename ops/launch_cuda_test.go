//go:build cuda

package ops

import (
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/internal/dtype"
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
