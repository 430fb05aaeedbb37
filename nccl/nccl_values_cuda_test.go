//go:build cuda

package nccl_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/nccl"
)

// The GPU tests' values, expected results, device buffers, and group, which
// issues one call per rank inside one NCCL group.

// value is rank r's element i: small integers, so that every sum, max,
// min and average over two ranks is exact in every dtype.
func value(r, i int) float64 { return float64((i*7+r*3)%9 - 4) }

// prodValue is rank r's element i for products: powers of two whose
// products are exact.
func prodValue(r, i int) float64 {
	return [...]float64{1, -1, 2, 0.5, -2}[(i*3+r)%5]
}

func input(op nccl.Op, r, i int) float64 {
	if op == nccl.Prod {
		return prodValue(r, i)
	}
	return value(r, i)
}

// reduced is what op gives over nranks ranks at element i.
func reduced(op nccl.Op, nranks, i int) float64 {
	acc := input(op, 0, i)
	for r := 1; r < nranks; r++ {
		x := input(op, r, i)
		switch op {
		case nccl.Sum, nccl.Avg:
			acc += x
		case nccl.Prod:
			acc *= x
		case nccl.Max:
			acc = math.Max(acc, x)
		case nccl.Min:
			acc = math.Min(acc, x)
		}
	}
	if op == nccl.Avg {
		acc /= float64(nranks)
	}
	return acc
}

// guard is how many elements of 0xff bytes (NaN in every float type)
// surround each output; a collective must leave them untouched.
const guard = 64

// devBuf is a device buffer with guard bands: view is the part a
// collective sees.
type devBuf struct {
	all, view driver.Buffer
	dt        dtype.DType
	ctx       *driver.Context
}

func newDevBuf(t *testing.T, ctx *driver.Context, dt dtype.DType, n int) *devBuf {
	t.Helper()
	size := int64(dt.Size())
	all, err := ctx.Alloc((int64(n) + 2*guard) * size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Free(all) })
	if err := ctx.Memset8(all, 0xff); err != nil {
		t.Fatal(err)
	}
	return &devBuf{all: all, view: all.Slice(guard*size, int64(n)*size), dt: dt, ctx: ctx}
}

// fill uploads vals into the view.
func (b *devBuf) fill(t *testing.T, vals []float64) {
	t.Helper()
	if err := b.ctx.CopyHtoD(b.view, dtype.Encode(b.dt, vals)); err != nil {
		t.Fatal(err)
	}
}

// read returns the view's values after checking the guard bands.
func (b *devBuf) read(t *testing.T) []float64 {
	t.Helper()
	raw := make([]byte, b.all.Size)
	if err := b.ctx.CopyDtoH(raw, b.all); err != nil {
		t.Fatal(err)
	}
	g := guard * b.dt.Size()
	ff := bytes.Repeat([]byte{0xff}, g)
	if !bytes.Equal(raw[:g], ff) || !bytes.Equal(raw[len(raw)-g:], ff) {
		t.Fatal("a guard band around the output was written")
	}
	return dtype.Decode(b.dt, raw[g:len(raw)-g])
}

// compare checks got against want element by element.
func compare(t *testing.T, got []float64, want func(i int) float64) {
	t.Helper()
	bad := 0
	for i, g := range got {
		w := want(i)
		if g != w {
			if bad < 5 {
				t.Errorf("element %d = %v, want %v", i, g, w)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d elements wrong", bad, len(got))
	}
}

// group runs one call per rank inside GroupStart/GroupEnd, as one
// goroutine driving several GPUs must, and waits for the streams.
func group(t *testing.T, rs []*rankGPU, call func(r int, g *rankGPU) error) {
	t.Helper()
	if err := nccl.GroupStart(); err != nil {
		t.Fatal(err)
	}
	var errs []error
	for i, g := range rs {
		if err := call(i, g); err != nil {
			errs = append(errs, fmt.Errorf("rank %d: %w", i, err))
		}
	}
	if err := nccl.GroupEnd(); err != nil {
		errs = append(errs, err)
	}
	for _, g := range rs {
		if err := g.stream.Synchronize(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func vals(n int, f func(i int) float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}
