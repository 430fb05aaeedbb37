// Package conform is the conformance suite: for each family it builds
// inputs (random values plus ties, zeros, NaN and inf), runs the plan on the
// GPU, and compares every output element with the float64 reference in
// internal/ref under per-dtype tolerances. Outputs live inside NaN guard
// bands that must come back untouched. The GPU tests (build tag cuda) and
// `baracuda selftest` both drive it.
package conform

import (
	"fmt"
	"math"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// Env is a GPU context and stream to run checks on.
type Env struct {
	Ctx    *driver.Context
	Stream *driver.Stream
}

// NewEnv loads the driver and opens a stream on device ordinal.
func NewEnv(ordinal int) (*Env, error) {
	if err := driver.Load(); err != nil {
		return nil, err
	}
	dev, err := driver.GetDevice(ordinal)
	if err != nil {
		return nil, err
	}
	ctx, err := dev.Context()
	if err != nil {
		return nil, err
	}
	s, err := ctx.NewStream()
	if err != nil {
		return nil, err
	}
	return &Env{Ctx: ctx, Stream: s}, nil
}

// Close destroys the stream.
func (e *Env) Close() error { return e.Stream.Destroy() }

// Result summarizes the checks of one kernel.
type Result struct {
	Kernel  string
	Cases   int     // shapes/layouts run
	Checked int64   // output elements compared
	MaxULP  float64 // largest ulp distance seen among finite results
	Fail    []string
}

// OK reports whether every check passed.
func (r *Result) OK() bool { return len(r.Fail) == 0 }

const maxFailures = 8

// Failf records a failure (the first few are kept).
func (r *Result) Failf(format string, args ...any) {
	if len(r.Fail) < maxFailures {
		r.Fail = append(r.Fail, fmt.Sprintf(format, args...))
	} else if len(r.Fail) == maxFailures {
		r.Fail = append(r.Fail, "... more failures")
	}
}

// Tol is a per-element tolerance: an element passes when its ulp distance
// to the rounded reference is at most ULP, or its absolute error is at most
// Abs (for results that cancel to near zero, where ulps mean little).
type Tol struct {
	ULP float64
	Abs float64
}

// DefaultTol is the elementwise tolerance: f16/bf16 compute in f32 and round
// once, so they may differ from the rounded float64 value by the double
// rounding plus a few f32 ulps; f32/f64 allow a few ulps of libm-grade math
// (powf is within 4 ulp, and e-1 in pow's exponent adds a little).
func DefaultTol(dt dtype.DType) Tol {
	switch dt {
	case dtype.F16, dtype.BF16:
		return Tol{ULP: 2}
	case dtype.F32:
		return Tol{ULP: 16}
	default:
		return Tol{ULP: 16}
	}
}

// Compare checks got (already in dtype dt) against the float64 want. NaN
// must meet NaN, an infinity must meet the same infinity; zeros of either
// sign are equal unless the caller pins signs itself.
func Compare(dt dtype.DType, got, want float64, tol Tol) (ok bool, ulp float64) {
	w := dtype.Round(dt, want)
	switch {
	case math.IsNaN(w) || math.IsNaN(got):
		return math.IsNaN(w) && math.IsNaN(got), 0
	case math.IsInf(w, 0) || math.IsInf(got, 0):
		return w == got, 0
	}
	ulp = dtype.ULPDistance(dt, got, w)
	return ulp <= tol.ULP || math.Abs(got-want) <= tol.Abs, ulp
}

// Guarded is device memory for one operand surrounded by guard bands. All
// of it starts as a NaN pattern; Span elements sit between Guard elements on
// each side.
type Guarded struct {
	env   *Env
	DT    dtype.DType
	Span  int64 // elements addressable by the tensor
	Guard int64
	whole driver.Buffer
}

// GuardElems is the guard band width in elements on each side.
const GuardElems = 64

// guardBits is the fill pattern: a quiet NaN with a payload that no kernel
// produces by arithmetic, so a stray write is always detected.
func guardBits(dt dtype.DType) []byte {
	switch dt {
	case dtype.F16:
		return []byte{0x5a, 0x7e}
	case dtype.BF16:
		return []byte{0xa5, 0x7f}
	case dtype.F32:
		return []byte{0x5a, 0x5a, 0xc5, 0x7f}
	default:
		return []byte{0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0xfa, 0x7f}
	}
}

// NewGuarded allocates span elements plus guards and fills all of it with
// the guard pattern.
func (e *Env) NewGuarded(dt dtype.DType, span int64) (*Guarded, error) {
	g := &Guarded{env: e, DT: dt, Span: span, Guard: GuardElems}
	total := (span + 2*g.Guard) * int64(dt.Size())
	buf, err := e.Ctx.Alloc(total)
	if err != nil {
		return nil, err
	}
	g.whole = buf
	pat := guardBits(dt)
	fill := make([]byte, total)
	for i := range fill {
		fill[i] = pat[i%len(pat)]
	}
	if err := e.Ctx.CopyHtoD(buf, fill); err != nil {
		g.Free()
		return nil, err
	}
	return g, nil
}

// Free releases the memory.
func (g *Guarded) Free() {
	_ = g.env.Ctx.Free(g.whole)
}

// Inner is the span between the guards.
func (g *Guarded) Inner() driver.Buffer {
	size := int64(g.DT.Size())
	return g.whole.Slice(g.Guard*size, g.Span*size)
}

// Tensor views the inner span with the given shape and strides.
func (g *Guarded) Tensor(shape, strides []int) ops.Tensor {
	return ops.Tensor{Buf: g.Inner(), DType: g.DT, Shape: shape, Strides: strides}
}

// Write stores vals (len Span) into the inner span.
func (g *Guarded) Write(vals []float64) error {
	return g.env.Ctx.CopyHtoD(g.Inner(), dtype.Encode(g.DT, vals))
}

// ReadChecked returns the inner span's values and an error naming the
// first guard element that no longer holds the guard pattern, and, when
// untouched is given, the first addressable-but-unaddressed element
// (untouched[i] true) that was written.
func (g *Guarded) ReadChecked(untouched []bool) ([]float64, error) {
	size := int64(g.DT.Size())
	raw := make([]byte, g.whole.Size)
	if err := g.env.Ctx.CopyDtoH(raw, g.whole); err != nil {
		return nil, err
	}
	pat := guardBits(g.DT)
	total := g.Span + 2*g.Guard
	for i := int64(0); i < total; i++ {
		inner := i >= g.Guard && i < g.Guard+g.Span
		if inner && (untouched == nil || !untouched[i-g.Guard]) {
			continue
		}
		for b := int64(0); b < size; b++ {
			if raw[i*size+b] != pat[b] {
				where := "guard band"
				if inner {
					where = fmt.Sprintf("element %d, which no index addresses,", i-g.Guard)
				} else if i >= g.Guard {
					where = fmt.Sprintf("guard band %d elements past the end", i-g.Guard-g.Span)
				} else {
					where = fmt.Sprintf("guard band %d elements before the start", g.Guard-i)
				}
				return nil, fmt.Errorf("%s was overwritten", where)
			}
		}
	}
	return dtype.Decode(g.DT, raw[g.Guard*size:(g.Guard+g.Span)*size]), nil
}

// Layout is one memory layout of a logical shape.
type Layout struct {
	Name    string
	Strides []int // nil: contiguous
	Offset  int64 // elements between the start of the span and element 0
	Span    int64 // elements from the start of the span to one past the last addressed
}

// Contiguous is the dense row-major layout.
func Contiguous(shape []int) Layout {
	return Layout{Name: "contiguous", Span: product(shape)}
}

// Unaligned is contiguous but starts one element into its buffer, so no
// 16-byte vector path can be taken.
func Unaligned(shape []int) Layout {
	return Layout{Name: "unaligned", Offset: 1, Span: product(shape) + 1}
}

// Shifted returns a contiguous layout that starts n elements into its
// buffer: with n = 2 or 4, 16-byte accesses are impossible for some dtypes
// while 8-byte ones still line up (f32 at n = 2, f16/bf16 at n = 4).
func Shifted(n int64) func([]int) Layout {
	return func(shape []int) Layout {
		return Layout{Name: fmt.Sprintf("shifted%d", n), Offset: n, Span: product(shape) + n}
	}
}

// Padded lays shape out inside a larger dense array (each dim one longer),
// so no dim is contiguous with the next.
func Padded(shape []int) Layout {
	strides := make([]int, len(shape))
	s := 1
	for d := len(shape) - 1; d >= 0; d-- {
		strides[d] = s
		s *= shape[d] + 1
	}
	return Layout{Name: "padded", Strides: strides, Span: spanOf(shape, strides)}
}

// Transposed stores the dims in reverse order (the first dim varies fastest).
func Transposed(shape []int) Layout {
	strides := make([]int, len(shape))
	s := 1
	for d := 0; d < len(shape); d++ {
		strides[d] = s
		s *= shape[d]
	}
	return Layout{Name: "transposed", Strides: strides, Span: spanOf(shape, strides)}
}

func product(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	return n
}

func spanOf(shape, strides []int) int64 {
	if product(shape) == 0 {
		return 0
	}
	s := int64(1)
	for d := range shape {
		s += int64(shape[d]-1) * int64(strides[d])
	}
	return s
}

// Offsets returns, for each logical element in row-major order, its offset
// in elements under strides (nil: contiguous).
func Offsets(shape, strides []int) []int64 {
	n := product(shape)
	out := make([]int64, n)
	if strides == nil {
		for i := range out {
			out[i] = int64(i)
		}
		return out
	}
	idx := make([]int, len(shape))
	for i := int64(0); i < n; i++ {
		off := int64(0)
		for d := range shape {
			off += int64(idx[d]) * int64(strides[d])
		}
		out[i] = off
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// Scatter places logical values into a span under the given offsets; the
// returned mask is true where no logical element lives.
func Scatter(vals []float64, offs []int64, span int64) (mem []float64, untouched []bool) {
	mem = make([]float64, span)
	untouched = make([]bool, span)
	for i := range untouched {
		untouched[i] = true
		mem[i] = math.NaN()
	}
	for i, o := range offs {
		mem[o] = vals[i]
		untouched[o] = false
	}
	return mem, untouched
}

// Gather reads logical values back from a span.
func Gather(mem []float64, offs []int64) []float64 {
	out := make([]float64, len(offs))
	for i, o := range offs {
		out[i] = mem[o]
	}
	return out
}

// Operand is one tensor of a check: its guarded memory, layout and shape.
type Operand struct {
	G      *Guarded
	Shape  []int
	Layout Layout
	offs   []int64
}

// dirtyWorkspace allocates a plan's workspace of ws bytes filled with
// 0xff, since a Run must not depend on its contents (nothing where ws is
// 0); free releases it.
func (e *Env) dirtyWorkspace(ws int64) (buf driver.Buffer, free func(), err error) {
	if ws <= 0 {
		return driver.Buffer{}, func() {}, nil
	}
	if buf, err = e.Ctx.Alloc(ws); err != nil {
		return driver.Buffer{}, nil, err
	}
	if err = e.Ctx.Memset8(buf, 0xff); err != nil {
		e.Ctx.Free(buf)
		return driver.Buffer{}, nil, err
	}
	return buf, func() { e.Ctx.Free(buf) }, nil
}

// NewOperand allocates a guarded operand. vals (logical, row-major) are
// written when non-nil; outputs pass nil and stay NaN-filled.
func (e *Env) NewOperand(dt dtype.DType, shape []int, l Layout, vals []float64) (*Operand, error) {
	g, err := e.NewGuarded(dt, l.Span)
	if err != nil {
		return nil, err
	}
	op := &Operand{G: g, Shape: shape, Layout: l, offs: Offsets(shape, l.Strides)}
	for i := range op.offs {
		op.offs[i] += l.Offset
	}
	if vals != nil {
		mem, _ := Scatter(vals, op.offs, l.Span)
		if err := g.Write(mem); err != nil {
			g.Free()
			return nil, err
		}
	}
	return op, nil
}

// Tensor is the ops view of the operand.
func (o *Operand) Tensor() ops.Tensor {
	t := o.G.Tensor(o.Shape, o.Layout.Strides)
	size := int64(o.G.DT.Size())
	t.Buf = t.Buf.Slice(o.Layout.Offset*size, t.Buf.Size-o.Layout.Offset*size)
	return t
}

// Read returns the logical values after checking guards and every
// unaddressed element inside the span.
func (o *Operand) Read() ([]float64, error) {
	_, untouched := Scatter(make([]float64, len(o.offs)), o.offs, o.Layout.Span)
	mem, err := o.G.ReadChecked(untouched)
	if err != nil {
		return nil, err
	}
	return Gather(mem, o.offs), nil
}

// Free releases the operand's memory.
func (o *Operand) Free() {
	if o != nil {
		o.G.Free()
	}
}
