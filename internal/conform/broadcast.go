package conform

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

// BroadcastCase is one shape pattern of a broadcasting binary check: dy
// has Shape, a and b (and da, db) AShape and BShape.
type BroadcastCase struct {
	Shape, AShape, BShape []int
	// Layouts of dy, a, b, da, db; nil entries are contiguous.
	Layouts [5]func([]int) Layout
	// Special mixes NaN and ±inf into the inputs (each sum then meets
	// one now and then); without it the inputs are finite.
	Special    bool
	NoDA, NoDB bool
}

func (c BroadcastCase) String() string {
	s := fmt.Sprintf("%v a%v b%v", c.Shape, c.AShape, c.BShape)
	for i, f := range c.Layouts {
		if f != nil {
			s += fmt.Sprintf(" %s:%s", [5]string{"dy", "a", "b", "da", "db"}[i], f([]int{2}).Name)
		}
	}
	if c.Special {
		s += " special"
	}
	if c.NoDA {
		s += " no-da"
	}
	if c.NoDB {
		s += " no-db"
	}
	return s
}

func (c BroadcastCase) layout(i int, shape []int) Layout {
	if c.Layouts[i] == nil {
		return Contiguous(shape)
	}
	return c.Layouts[i](shape)
}

// strided gives dy and db a transposed layout and a, b and da padded ones.
var strided = [5]func([]int) Layout{Transposed, Padded, Padded, Padded, Transposed}

// unaligned starts every operand one element into its buffer (no packs).
var unaligned = [5]func([]int) Layout{Unaligned, Unaligned, Unaligned, Unaligned, Unaligned}

// BroadcastCases is the suite: the bench's patterns scaled down (b of
// [C], of [R, 1] and 0-d; a broadcast instead of b), sizes that leave a
// tail in the packs, the lanes, the warps' rows and the tiles, sums that
// span several tiles or chunks (a 0-d sum with several packs a thread),
// the general path (rank 3 and up, both operands broadcast, strided
// tensors), empty dy, and single outputs.
// quick trims it for selftest.
func BroadcastCases(quick bool) []BroadcastCase {
	cs := []BroadcastCase{
		// The tile path: columns, rows, everything.
		{Shape: []int{257, 1000}, AShape: []int{257, 1000}, BShape: []int{1000}},
		{Shape: []int{257, 1000}, AShape: []int{257, 1000}, BShape: []int{257, 1}},
		{Shape: []int{257, 1000}, AShape: []int{257, 1000}, BShape: []int{}},
		{Shape: []int{1000}, AShape: []int{}, BShape: []int{1000}},
		{Shape: []int{33, 5}, AShape: []int{5}, BShape: []int{33, 5}},
		{Shape: []int{1}, AShape: []int{}, BShape: []int{1}},
		{Shape: []int{31, 1}, AShape: []int{31, 1}, BShape: []int{1}},
		// Outer products: both operands broadcast, one pass.
		{Shape: []int{33, 65}, AShape: []int{33, 1}, BShape: []int{1, 65}},
		{Shape: []int{100}, AShape: []int{}, BShape: []int{1}},
		{Shape: []int{33, 65}, AShape: []int{65}, BShape: []int{1, 65}},
		// The general path.
		{Shape: []int{4, 33, 65}, AShape: []int{4, 33, 65}, BShape: []int{4, 1, 65}},
		{Shape: []int{2, 3, 4, 5}, AShape: []int{3, 1, 5}, BShape: []int{2, 1, 4, 1}},
		{Shape: []int{5, 1, 7}, AShape: []int{5, 1, 1}, BShape: []int{1, 1, 7}},
		{Shape: []int{2, 1, 3, 2, 1, 2, 3, 2}, AShape: []int{1, 1, 3, 1, 1, 2, 1, 2}, BShape: []int{2, 1, 3, 2, 1, 2, 3, 2}},
		// Empty dy: the reduced gradients are zeros.
		{Shape: []int{0, 5}, AShape: []int{0, 5}, BShape: []int{5}},
		{Shape: []int{5, 0}, AShape: []int{}, BShape: []int{5, 1}},
		// Special values on short sums.
		{Shape: []int{9, 33}, AShape: []int{9, 33}, BShape: []int{33}, Special: true},
		{Shape: []int{9, 33}, AShape: []int{9, 1}, BShape: []int{9, 33}, Special: true},
		{Shape: []int{3, 4, 5}, AShape: []int{3, 1, 5}, BShape: []int{4, 1}, Special: true},
		// Strided and unaligned layouts.
		{Shape: []int{17, 31}, AShape: []int{17, 31}, BShape: []int{31}, Layouts: strided},
		{Shape: []int{4, 33, 65}, AShape: []int{4, 33, 65}, BShape: []int{4, 1, 65}, Layouts: strided},
		{Shape: []int{129, 67}, AShape: []int{129, 67}, BShape: []int{67}, Layouts: unaligned},
		{Shape: []int{129, 67}, AShape: []int{129, 1}, BShape: []int{}, Layouts: unaligned},
		// Single outputs.
		{Shape: []int{257, 1000}, AShape: []int{257, 1000}, BShape: []int{1000}, NoDA: true},
		{Shape: []int{257, 1000}, AShape: []int{257, 1000}, BShape: []int{257, 1}, NoDB: true},
		{Shape: []int{4, 33, 65}, AShape: []int{4, 33, 65}, BShape: []int{4, 1, 65}, NoDA: true},
	}
	if quick {
		return cs[:11]
	}
	return append(cs,
		// Sums over many tiles or chunks: long columns, long rows, 1-D.
		BroadcastCase{Shape: []int{4099, 300}, AShape: []int{4099, 300}, BShape: []int{300}},
		BroadcastCase{Shape: []int{9, 70001}, AShape: []int{9, 70001}, BShape: []int{9, 1}},
		BroadcastCase{Shape: []int{1<<20 + 3}, AShape: []int{1<<20 + 3}, BShape: []int{}},
		BroadcastCase{Shape: []int{1<<21 + 1024}, AShape: []int{}, BShape: []int{1<<21 + 1024}},
		BroadcastCase{Shape: []int{3, 20000, 2}, AShape: []int{3, 1, 2}, BShape: []int{3, 20000, 2}},
		// The bench shapes, scaled down.
		BroadcastCase{Shape: []int{512, 4096}, AShape: []int{512, 4096}, BShape: []int{4096}},
		BroadcastCase{Shape: []int{512, 4096}, AShape: []int{512, 4096}, BShape: []int{512, 1}},
		BroadcastCase{Shape: []int{512, 4096}, AShape: []int{512, 4096}, BShape: []int{}},
	)
}

// broadcastValue draws one input: binaryValue's mix without values so
// large or small that a sum of them overflows where the float64 one does
// not, infinities and NaN only when special; maximum and minimum get
// small integers a third of the time, so that ties are common.
func broadcastValue(rng *rand.Rand, op string, second, special bool) float64 {
	if (op == "maximum" || op == "minimum") && rng.IntN(3) == 0 {
		return float64(rng.IntN(5) - 2)
	}
	for {
		v := binaryValue(rng, op, second)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if special {
				return v
			}
			continue
		}
		if a := math.Abs(v); a > 1e6 || a != 0 && a < 1e-6 {
			continue
		}
		if op == "pow" && !second && !special {
			// A negative base with a fractional exponent makes de NaN;
			// most sums would meet one.
			v = math.Abs(v)
		}
		return v
	}
}

// CheckBinaryBroadcast runs every case for one (op, dtype) against the
// float64 reference. A sum of n terms may differ from the reference by
// the opmath roundings of its terms and of n additions (n·eps times the
// sum of |terms|) on top of the elementwise tolerance; a second Run must
// give the same bits.
func (e *Env) CheckBinaryBroadcast(op ops.BinaryOp, dt dtype.DType, cases []BroadcastCase, seed uint64) Result {
	desc := ops.BinaryDesc{Op: op, DType: dt, Alpha: 0.75, Weight: 0.3}
	name := op.String()
	res := Result{Kernel: "bcast_bw_" + name + "_" + dt.Suffix()}
	s := binaryScalar(desc)
	rng := rand.New(rand.NewPCG(seed, uint64(op)<<8|uint64(dt)|1<<20))
	for _, c := range cases {
		res.Cases++
		desc.Shape, desc.AShape, desc.BShape = c.Shape, c.AShape, c.BShape
		plan, err := ops.NewBinaryBackward(desc)
		if err != nil {
			res.Failf("%v: NewBinaryBackward: %v", c, err)
			continue
		}
		shapes := [3][]int{c.Shape, c.AShape, c.BShape}
		var in [3][]float64
		for k := range in {
			in[k] = make([]float64, product(shapes[k]))
			for i := range in[k] {
				if k == 0 {
					in[k][i] = dtype.Round(dt, rng.NormFloat64())
				} else {
					in[k][i] = dtype.Round(dt, broadcastValue(rng, name, k == 2, c.Special))
				}
			}
		}
		if err := e.runBroadcastCase(plan, c, in, s, &res); err != nil {
			res.Failf("%v: %v", c, err)
		}
	}
	return res
}

func (e *Env) runBroadcastCase(plan *ops.BinaryBackward, c BroadcastCase, in [3][]float64, s float64, res *Result) error {
	dt := plan.Desc().DType
	op := plan.Desc().Op.String()
	shapes := [5][]int{c.Shape, c.AShape, c.BShape, c.AShape, c.BShape}
	var operands [5]*Operand
	defer func() {
		for _, o := range operands {
			o.Free()
		}
	}()
	var layouts [5]Layout
	for i := range layouts {
		layouts[i] = c.layout(i, shapes[i])
	}
	args, err := e.binaryOperands(dt, shapes, layouts, in, c.NoDA, c.NoDB, &operands)
	if err != nil {
		return err
	}
	ws, freeWS, err := e.dirtyWorkspace(plan.WorkspaceSize())
	if err != nil {
		return err
	}
	defer freeWS()
	args.Workspace = ws
	// The reference, and each gradient's sum of |terms|.
	wantA, wantB := ref.BinaryBroadcastBackward(op, c.Shape, c.AShape, c.BShape, in[0], in[1], in[2], s)
	ia, ib := ref.BroadcastIndex(c.AShape, c.Shape), ref.BroadcastIndex(c.BShape, c.Shape)
	terms := [2][]float64{make([]float64, len(in[0])), make([]float64, len(in[0]))}
	for i, g := range in[0] {
		terms[0][i], terms[1][i] = ref.BinaryBackward(op, g, in[1][ia[i]], in[2][ib[i]], s)
	}
	absSum := [2][]float64{ref.BroadcastAbsSum(terms[0], c.AShape, c.Shape), ref.BroadcastAbsSum(terms[1], c.BShape, c.Shape)}
	// pow's terms carry the elementwise check's slack (CheckBinary): da's
	// for b-1 rounded in opmath, db's for the reference's own a^b. Each
	// gradient allows the sum of its terms' slacks on top.
	var slack [2][]float64
	if op == "pow" {
		sl := [2][]float64{make([]float64, len(in[0])), make([]float64, len(in[0]))}
		for i, g := range in[0] {
			av, bv := in[1][ia[i]], in[2][ib[i]]
			sl[0][i] = powExponentSlack(dt, terms[0][i], av, bv)
			sl[1][i] = powReferenceSlack(terms[1][i], g, av, bv)
		}
		slack = [2][]float64{ref.BroadcastAbsSum(sl[0], c.AShape, c.Shape), ref.BroadcastAbsSum(sl[1], c.BShape, c.Shape)}
	}
	count := [2]float64{float64(len(in[0])) / float64(max(1, len(wantA))), float64(len(in[0])) / float64(max(1, len(wantB)))}
	eps := math.Ldexp(1, -24)
	rel := 8 * eps
	if dt == dtype.F64 {
		eps = math.Ldexp(1, -53)
		rel = 8 * eps
	}
	if op == "pow" && (dt == dtype.F16 || dt == dtype.BF16) {
		rel = math.Ldexp(1, -14) // pow's narrow-type math (gen/binary.cuh)
	}
	tol := DefaultTol(dt)
	var first [2][]float64
	for run := 0; run < 2; run++ {
		if err := plan.Run(e.Stream, &args); err != nil {
			return fmt.Errorf("Run: %w", err)
		}
		if err := e.Stream.Synchronize(); err != nil {
			return fmt.Errorf("synchronize: %w", err)
		}
		for k, o := range operands[3:] {
			if o == nil {
				continue
			}
			field := [2]string{"da", "db"}[k]
			got, err := o.Read()
			if err != nil {
				return fmt.Errorf("%s: %w", field, err)
			}
			if run == 1 {
				for i := range got {
					if dtype.Bits(dt, got[i]) != dtype.Bits(dt, first[k][i]) && !(math.IsNaN(got[i]) && math.IsNaN(first[k][i])) {
						return fmt.Errorf("second run differs at %s[%d]: %v, then %v", field, i, first[k][i], got[i])
					}
				}
				continue
			}
			first[k] = got
			want := [2][]float64{wantA, wantB}[k]
			for i := range got {
				t := tol
				if as := absSum[k][i]; !math.IsInf(as, 0) && !math.IsNaN(as) {
					t.Abs = as * (rel + count[k]*eps)
					if slack[k] != nil && !math.IsNaN(slack[k][i]) && !math.IsInf(slack[k][i], 0) {
						t.Abs += slack[k][i]
					}
				}
				ok, ulp := Compare(dt, got[i], want[i], t)
				res.Checked++
				if ulp > res.MaxULP && count[k] <= 1 {
					res.MaxULP = ulp
				}
				if !ok {
					res.Failf("%v: %s[%d] = %v, want %v (sum of |terms| %v, %.0f ulp)", c, field, i, got[i],
						dtype.Round(dt, want[i]), absSum[k][i], ulp)
				}
			}
		}
	}
	return nil
}

func init() {
	suites = append(suites, Suite{Family: "bcast", Run: runBroadcastSuite, One: oneBroadcast})
}

func runBroadcastSuite(e *Env, quick bool) []Result {
	var out []Result
	cases := BroadcastCases(quick)
	for _, op := range ops.BinaryOps() {
		for _, dt := range dtype.All {
			out = append(out, e.CheckBinaryBroadcast(op, dt, cases, 41))
		}
	}
	return out
}

func oneBroadcast(e *Env, pick uint64) Result {
	all := ops.BinaryOps()
	op := all[pick%uint64(len(all))]
	dt := dtype.All[(pick/16)%uint64(len(dtype.All))]
	cases := []BroadcastCase{
		{Shape: []int{65, 130}, AShape: []int{65, 130}, BShape: []int{130}},
		{Shape: []int{3, 5, 7}, AShape: []int{3, 1, 7}, BShape: []int{}},
	}
	return e.CheckBinaryBroadcast(op, dt, cases, pick)
}
