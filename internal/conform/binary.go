package conform

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

// BinaryCase is one shape and memory layout of a binary check.
type BinaryCase struct {
	Shape []int
	// Layouts of dy, a, b, da, db.
	Layouts [5]func([]int) Layout
	// NoDA / NoDB leave that output out of the Run.
	NoDA, NoDB bool
}

func (c BinaryCase) String() string {
	s := fmt.Sprintf("%v", c.Shape)
	for i, f := range c.Layouts {
		s += fmt.Sprintf(" %s:%s", [5]string{"dy", "a", "b", "da", "db"}[i], f(c.Shape).Name)
	}
	if c.NoDA {
		s += " no-da"
	}
	if c.NoDB {
		s += " no-db"
	}
	return s
}

func same(f func([]int) Layout) [5]func([]int) Layout {
	return [5]func([]int) Layout{f, f, f, f, f}
}

// BinaryCases is the suite: every size that hits a tail of the vector and
// grid-stride loops, every layout kind, mixed layouts and single outputs.
// quick trims it for selftest.
func BinaryCases(quick bool) []BinaryCase {
	var cs []BinaryCase
	sizes := []int{0, 1, 31, 33, 1025, 1<<20 + 3}
	if quick {
		sizes = []int{0, 1, 33, 1025}
	}
	for _, n := range sizes {
		cs = append(cs, BinaryCase{Shape: []int{n}, Layouts: same(Contiguous)})
		cs = append(cs, BinaryCase{Shape: []int{n}, Layouts: same(Unaligned)})
	}
	shapes := [][]int{{3, 5, 7}, {2, 1, 33}, {17, 31}, {4, 3, 2, 5}, {2, 3, 1, 2, 3, 1, 2, 2}}
	if quick {
		shapes = shapes[:2]
	}
	for _, s := range shapes {
		cs = append(cs, BinaryCase{Shape: s, Layouts: same(Contiguous)})
		cs = append(cs, BinaryCase{Shape: s, Layouts: same(Padded)})
		cs = append(cs, BinaryCase{Shape: s, Layouts: same(Transposed)})
		cs = append(cs, BinaryCase{Shape: s, Layouts: [5]func([]int) Layout{Transposed, Padded, Contiguous, Padded, Transposed}})
	}
	cs = append(cs, BinaryCase{Shape: []int{1000}, Layouts: same(Contiguous), NoDA: true})
	cs = append(cs, BinaryCase{Shape: []int{7, 9}, Layouts: same(Padded), NoDB: true})
	return cs
}

// binaryValue draws one input: mostly moderate random values, with zeros,
// signed zeros, ±1, integers, inf and NaN mixed in.
func binaryValue(rng *rand.Rand, op string, second bool) float64 {
	if rng.IntN(8) == 0 {
		specials := []float64{0, math.Copysign(0, -1), 1, -1, 2, -2, 0.5, 3, math.Inf(1), math.Inf(-1), math.NaN()}
		if op == "pow" {
			// Bases whose powers under- or overflow f64 (in f32 and
			// narrower they round to 0 and inf), on one side of
			// a^(e-1) = a^e/a or both, and integer exponents too large
			// for e-1 to be exact, where a negative base's sign follows
			// the rounded e-1.
			extremes := []float64{1e-300, -1e-300, 1e300, -1e300}
			if second {
				extremes = []float64{1e-3, 0x1p60, 0x1p60 + 0x1p8, -0x1p60}
			}
			specials = append(specials, extremes...)
		}
		return specials[rng.IntN(len(specials))]
	}
	switch {
	case op == "pow" && second:
		if rng.IntN(3) == 0 {
			return float64(rng.IntN(7) - 3) // integer exponents reach negative bases
		}
		return rng.Float64()*6 - 3
	case op == "pow":
		return rng.Float64()*4 - 1
	}
	return rng.NormFloat64() * 2
}

// binaryScalar is the reference's scalar for desc: alpha for add and sub,
// the weight for lerp, else 0.
func binaryScalar(desc ops.BinaryDesc) float64 {
	switch desc.Op {
	case ops.BinaryAdd, ops.BinarySub:
		return desc.Alpha
	case ops.BinaryLerp:
		return desc.Weight
	}
	return 0
}

// CheckBinary runs every case for one (op, dtype) and compares with the reference.
func (e *Env) CheckBinary(op ops.BinaryOp, dt dtype.DType, cases []BinaryCase, seed uint64) Result {
	desc := ops.BinaryDesc{Op: op, DType: dt, Alpha: 0.75, Weight: 0.3}
	name := op.String()
	res := Result{Kernel: "binary_bw_" + name + "_" + dt.Suffix()}
	s := binaryScalar(desc)
	rng := rand.New(rand.NewPCG(seed, uint64(op)<<8|uint64(dt)))
	tol := DefaultTol(dt)
	for _, c := range cases {
		res.Cases++
		desc.Shape = c.Shape
		plan, err := ops.NewBinaryBackward(desc)
		if err != nil {
			res.Failf("%v: NewBinaryBackward: %v", c, err)
			continue
		}
		n := int(product(c.Shape))
		in := [3][]float64{make([]float64, n), make([]float64, n), make([]float64, n)}
		for i := 0; i < n; i++ {
			in[0][i] = dtype.Round(dt, rng.NormFloat64())
			in[1][i] = dtype.Round(dt, binaryValue(rng, name, false))
			in[2][i] = dtype.Round(dt, binaryValue(rng, name, true))
			if (op == ops.BinaryMaximum || op == ops.BinaryMinimum) && rng.IntN(6) == 0 {
				in[2][i] = in[1][i] // ties
			}
		}
		if err := e.runBinaryCase(plan, c, in, s, tol, &res); err != nil {
			res.Failf("%v: %v", c, err)
		}
	}
	return res
}

// binaryOperands makes dy, a and b (holding in) and da and db (but for
// noDA, noDB) of shapes[i] laid out as layouts[i], in operands, which the
// caller frees, and returns the args that name them.
func (e *Env) binaryOperands(dt dtype.DType, shapes [5][]int, layouts [5]Layout, in [3][]float64, noDA, noDB bool, operands *[5]*Operand) (ops.BinaryArgs, error) {
	for i := range operands {
		var vals []float64
		if i < 3 {
			vals = in[i]
		}
		if (i == 3 && noDA) || (i == 4 && noDB) {
			continue
		}
		o, err := e.NewOperand(dt, shapes[i], layouts[i], vals)
		if err != nil {
			return ops.BinaryArgs{}, err
		}
		operands[i] = o
	}
	args := ops.BinaryArgs{DY: operands[0].Tensor(), A: operands[1].Tensor(), B: operands[2].Tensor()}
	if operands[3] != nil {
		args.DA = operands[3].Tensor()
	}
	if operands[4] != nil {
		args.DB = operands[4].Tensor()
	}
	return args, nil
}

func (e *Env) runBinaryCase(plan *ops.BinaryBackward, c BinaryCase, in [3][]float64, s float64, tol Tol, res *Result) error {
	dt := plan.Desc().DType
	var operands [5]*Operand
	defer func() {
		for _, o := range operands {
			o.Free()
		}
	}()
	var shapes [5][]int
	var layouts [5]Layout
	for i := range shapes {
		shapes[i], layouts[i] = c.Shape, c.Layouts[i](c.Shape)
	}
	args, err := e.binaryOperands(dt, shapes, layouts, in, c.NoDA, c.NoDB, &operands)
	if err != nil {
		return err
	}
	if err := plan.Run(e.Stream, &args); err != nil {
		return fmt.Errorf("Run: %w", err)
	}
	if err := e.Stream.Synchronize(); err != nil {
		return fmt.Errorf("synchronize: %w", err)
	}
	op := plan.Desc().Op.String()
	for k, o := range operands[3:] {
		if o == nil {
			continue
		}
		got, err := o.Read()
		if err != nil {
			return fmt.Errorf("%s: %w", [2]string{"da", "db"}[k], err)
		}
		for i := range got {
			da, db := ref.BinaryBackward(op, in[0][i], in[1][i], in[2][i], s)
			want := [2]float64{da, db}[k]
			t := tol
			if op == "pow" && k == 0 {
				t.Abs = powExponentSlack(dt, want, in[1][i], in[2][i])
			}
			if op == "pow" && k == 1 {
				t.Abs = powReferenceSlack(want, in[0][i], in[1][i], in[2][i])
			}
			ok, ulp := Compare(dt, got[i], want, t)
			res.Checked++
			if ulp > res.MaxULP {
				res.MaxULP = ulp
			}
			if !ok {
				res.Failf("%v: %s[%d] = %v, want %v (dy=%v a=%v b=%v, %.0f ulp)", c, [2]string{"da", "db"}[k], i, got[i],
					dtype.Round(dt, want), in[0][i], in[1][i], in[2][i], ulp)
			}
		}
	}
	return nil
}

// BinaryVectors are the observed PyTorch 2.11 values of docs/semantics.md 2,
// checked exactly (signed zeros included) for every dtype.
var BinaryVectors = []struct {
	Op       ops.BinaryOp
	DY, A, B []float64
	DA, DB   []float64
}{
	{ops.BinaryMaximum, []float64{1, 1, 1, 1}, []float64{1, 2, math.NaN(), 1}, []float64{1, 1, 1, math.NaN()},
		[]float64{0.5, 1, 1, 1}, []float64{0.5, 0, 1, 1}},
	{ops.BinaryMinimum, []float64{1, 1, 1, 1}, []float64{1, 2, math.NaN(), 1}, []float64{1, 1, 1, math.NaN()},
		[]float64{0.5, 0, 1, 1}, []float64{0.5, 1, 1, 1}},
	{ops.BinaryPow, []float64{1, 1, 1, 1}, []float64{0, 0, -2, 0}, []float64{0, -1, 2, 0.5},
		[]float64{0, math.Inf(-1), -4, math.Inf(1)}, []float64{0, math.Inf(-1), math.NaN(), 0}},
	{ops.BinaryAtan2, []float64{1}, []float64{0}, []float64{0}, []float64{0}, []float64{math.Copysign(0, -1)}},
	{ops.BinaryHypot, []float64{1}, []float64{0}, []float64{0}, []float64{math.NaN()}, []float64{math.NaN()}},
}

// CheckBinaryVectors runs the pinned vectors for one dtype.
func (e *Env) CheckBinaryVectors(dt dtype.DType) Result {
	res := Result{Kernel: "binary vectors " + dt.Suffix()}
	for _, v := range BinaryVectors {
		res.Cases++
		shape := []int{len(v.A)}
		plan, err := ops.NewBinaryBackward(ops.BinaryDesc{Op: v.Op, DType: dt, Shape: shape})
		if err != nil {
			res.Failf("%s: %v", v.Op, err)
			continue
		}
		var os [5]*Operand
		vals := [5][]float64{v.DY, v.A, v.B, nil, nil}
		var err2 error
		for i := range os {
			if os[i], err2 = e.NewOperand(dt, shape, Contiguous(shape), vals[i]); err2 != nil {
				break
			}
		}
		if err2 == nil {
			args := ops.BinaryArgs{DY: os[0].Tensor(), A: os[1].Tensor(), B: os[2].Tensor(), DA: os[3].Tensor(), DB: os[4].Tensor()}
			if err2 = plan.Run(e.Stream, &args); err2 == nil {
				err2 = e.Stream.Synchronize()
			}
		}
		for k, want := range [2][]float64{v.DA, v.DB} {
			if err2 != nil {
				break
			}
			var got []float64
			if got, err2 = os[3+k].Read(); err2 != nil {
				break
			}
			for i := range got {
				res.Checked++
				if !sameBits(got[i], want[i]) {
					res.Failf("%s %s[%d] = %v, want %v (PyTorch 2.11)", v.Op, [2]string{"da", "db"}[k], i, got[i], want[i])
				}
			}
		}
		if err2 != nil {
			res.Failf("%s: %v", v.Op, err2)
		}
		for _, o := range os {
			o.Free()
		}
	}
	return res
}

// sameBits compares values exactly, with NaN equal to NaN and the sign of
// zero significant.
func sameBits(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return a == b && math.Signbit(a) == math.Signbit(b)
}

// powReferenceSlack is the error of the reference's own a^b in db =
// g*a^b*ln(a): Go's math.Pow forms exp(f*ln a) for the fractional part f of
// b, so it is within about |b*ln a| float64 ulps, not half an ulp; for f64
// bases near 1e±300 that is tens to hundreds of ulps (the GPU's pow is
// within 2). Where a^b underflows into the subnormals, the two may also
// round it to neighbouring multiples of 2^-1074 (0 against 4.9e-324 for
// 1e300^-1.0787), which g*ln(a) scales. Twice the sum of the two is
// allowed on top of the ulp tolerance; for f32 and narrower,
// and for f64 with moderate a and b, it is far below one ulp of the
// result and changes nothing.
func powReferenceSlack(want, g, a, b float64) float64 {
	ln := math.Abs(math.Log(math.Abs(a)))
	return 2 * (math.Abs(want)*ln*math.Abs(b)*math.Ldexp(1, -53) + math.Abs(g)*ln*math.Ldexp(1, -1074))
}

// powExponentSlack is the extra absolute error of pow's da = g*b*a^(b-1)
// that comes from forming b-1 in opmath (as PyTorch does): rounding b-1
// by eps·|b-1| moves a^(b-1) by a relative |ln a|·eps·|b-1|. Twice that
// bound is allowed on top of the ulp tolerance.
func powExponentSlack(dt dtype.DType, want, a, b float64) float64 {
	eps := math.Ldexp(1, -24)
	if dt == dtype.F64 {
		eps = math.Ldexp(1, -53)
	}
	return 2 * math.Abs(want) * math.Abs(math.Log(math.Abs(a))) * math.Abs(b-1) * eps
}
