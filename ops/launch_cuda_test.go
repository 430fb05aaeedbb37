//go:build cuda

package ops

import (
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/internal/dtype"
)

// BenchmarkLaunchOnly times Function.Launch of the binary mul kernel with a
// pre-packed argument block: the driver's own cost, to set against
// BenchmarkRunHost (validation + packing + launch) in ops_test.
func BenchmarkLaunchOnly(b *testing.B) {
	if err := driver.Load(); err != nil {
		b.Fatal(err)
	}
	dev, err := driver.GetDevice(0)
	if err != nil {
		b.Fatal(err)
	}
	ctx, err := dev.Context()
	if err != nil {
		b.Fatal(err)
	}
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
