package conform

import (
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// Suite checks every (op, dtype) of one family.
type Suite struct {
	Family string
	// Run checks every kernel of the family; quick trims the cases to what
	// selftest needs (every kernel still runs, on fewer shapes).
	Run func(e *Env, quick bool) []Result
	// One checks one kernel chosen by pick on a few small cases: the unit
	// of work of the concurrency and leak tests.
	One func(e *Env, pick uint64) Result
}

// suites are registered by each family's file, in family order.
var suites []Suite

// Suites returns the conformance suites of every family.
func Suites() []Suite { return suites }

func init() {
	suites = append(suites, Suite{Family: "binary", Run: runBinarySuite, One: oneBinary})
}

func runBinarySuite(e *Env, quick bool) []Result {
	var out []Result
	cases := BinaryCases(quick)
	for _, op := range ops.BinaryOps() {
		for _, dt := range dtype.All {
			out = append(out, e.CheckBinary(op, dt, cases, 42))
		}
	}
	for _, dt := range dtype.All {
		out = append(out, e.CheckBinaryVectors(dt))
	}
	return out
}

func oneBinary(e *Env, pick uint64) Result {
	all := ops.BinaryOps()
	op := all[pick%uint64(len(all))]
	dt := dtype.All[(pick/16)%uint64(len(dtype.All))]
	cases := []BinaryCase{
		{Shape: []int{257}, Layouts: same(Contiguous)},
		{Shape: []int{3, 5, 7}, Layouts: same(Transposed)},
	}
	return e.CheckBinary(op, dt, cases, pick)
}

// WithStream returns an Env on the same context with its own new stream.
func (e *Env) WithStream() (*Env, error) {
	s, err := e.Ctx.NewStream()
	if err != nil {
		return nil, err
	}
	return &Env{Ctx: e.Ctx, Stream: s}, nil
}
