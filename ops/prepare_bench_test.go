package ops

import (
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// BenchmarkBinaryPrepare is the Go share of a warm Run without the driver
// call: Check, the collapsed layout and argument packing.
func BenchmarkBinaryPrepare(b *testing.B) {
	p, err := NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: []int{64, 1024}})
	if err != nil {
		b.Fatal(err)
	}
	t := fakeTensor(dtype.F32, 64, 1024)
	args := BinaryArgs{DY: t, A: t, B: t, DA: t, DB: t}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := p.Check(&args); err != nil {
			b.Fatal(err)
		}
		ts := [5]*Tensor{&args.DY, &args.A, &args.B, &args.DA, &args.DB}
		v := collapse(p.shape, &ts)
		L := binaryLayout{n: v.n, rank: int32(v.rank), dim: v.dim, stride: v.stride}
		a := driver.GetArgs()
		p.pack(a, &ts, &L)
		driver.PutArgs(a)
	}
}
