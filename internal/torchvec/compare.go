package torchvec

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/baracuda-go/baracuda/dtype"
)

// tolEps is how many machine epsilons of the dtype Tol allows per unit of
// an element's error scale. PyTorch rounds to the dtype after each op of a
// backward formula (up to six for LP pooling) and its scans accumulate in
// the dtype, while the kernels and the reference round once: the scale
// counts those roundings, and four epsilons (eight units of rounding) cover
// a rounding's worst case twice over. Structural mistakes (a tie split
// among the wrong count, a gradient sent to the wrong element, a sign) are
// larger than that in every dtype but for the counts of many ties in bf16.
const tolEps = 4

// Tol is the absolute difference allowed between a gradient element and
// PyTorch's value want, for an element of error scale scale (Expect): tolEps
// epsilons of the dtype times |want| + scale, plus two of the dtype's
// smallest subnormals for results that PyTorch rounds through subnormal
// intermediates.
func Tol(dt dtype.DType, want, scale float64) float64 {
	return tolEps*dtype.Epsilon(dt)*(math.Abs(want)+scale) + 2*minSubnormal(dt)
}

func minSubnormal(dt dtype.DType) float64 {
	switch dt {
	case dtype.F16:
		return 0x1p-24
	case dtype.BF16:
		return 0x1p-133
	case dtype.F32:
		return 0x1p-149
	}
	return math.SmallestNonzeroFloat64
}

// Agree reports whether got matches want: NaN only NaN, an infinity only the
// same infinity, a finite value one within tol.
func Agree(got, want, tol float64) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return got == want
	}
	return math.Abs(got-want) <= tol
}

// Outcome is the comparison of one case's gradients with PyTorch's.
type Outcome struct {
	Case    *Case
	Checked int      // elements compared
	Alt     int      // elements that matched PyTorch's float64 value only (see Case.Alt)
	Failed  int      // elements that matched neither
	Fail    []string // the first failures, described; also a case that could not run
}

// OK reports whether every element agreed and the case ran.
func (o *Outcome) OK() bool { return o.Failed == 0 && len(o.Fail) == 0 }

// Errors describes the case's failures: the first ones, then how many
// elements disagreed in all where that is more.
func (o *Outcome) Errors() []string {
	errs := o.Fail
	if o.Failed > maxFailures {
		errs = append(slices.Clip(errs), fmt.Sprintf("%d elements of %d disagree in all", o.Failed, o.Checked))
	}
	return errs
}

// maxFailures is how many failures an Outcome describes.
const maxFailures = 6

// Failf records a failure of the case as a whole (it could not run).
func (o *Outcome) Failf(format string, args ...any) {
	o.Fail = append(o.Fail, fmt.Sprintf(format, args...))
}

// Compare checks got, the values of gradient e.Name in the case's dtype
// (row-major), against PyTorch's, with e's error scales; who names what
// computed got in failure messages ("reference", "GPU"). Where the case has
// an alternative (Alt), got may match that instead, or altGot may: the
// same gradient computed from Y64 where that differs from y (the
// reference's; nil for the GPU's, which has one answer).
func (c *Case) Compare(o *Outcome, e Expect, got, altGot []float64, who string) {
	want := c.Tensors[e.Name]
	if len(got) != len(want) {
		o.Failf("%s: %d elements, PyTorch's %s has %d", e.Name, len(got), e.Name, len(want))
		return
	}
	if altGot == nil {
		altGot = got
	}
	alt := c.Alt[e.Name]
	for i, g := range got {
		o.Checked++
		tol := Tol(c.DType, want[i], e.Scale[i])
		if Agree(g, want[i], tol) {
			continue
		}
		if a, ok := alt[i]; ok && (Agree(g, a, Tol(c.DType, a, e.Scale[i])) || Agree(altGot[i], a, Tol(c.DType, a, e.Scale[i]))) {
			o.Alt++
			continue
		}
		o.Failed++
		if o.Failed <= maxFailures {
			msg := fmt.Sprintf("%s[%d] = %v (%s), PyTorch %v", e.Name, i, g, who, want[i])
			if a, ok := alt[i]; ok {
				msg += fmt.Sprintf(" or %v (float64)", a)
			}
			if !math.IsNaN(tol) && !math.IsInf(want[i], 0) {
				msg += fmt.Sprintf(", tolerance %.3g", tol)
			}
			o.Fail = append(o.Fail, msg+"; "+c.Inputs(i))
		}
	}
}

// Inputs describes the inputs behind element i of a gradient: the
// operands of a binary op, else the slice or window it belongs to (as much
// as a failure message needs).
func (c *Case) Inputs(i int) string {
	t := c.Tensors
	switch c.Family {
	case "binary":
		return fmt.Sprintf("dy=%v a=%v b=%v", t["dy"][i], t["a"][i], t["b"][i])
	case "reduce", "scan":
		axis, err := normAxis(c.Params.Axis, len(c.Shape))
		if err != nil {
			return err.Error()
		}
		v := refSlices(c.Shape, axis)
		s, j := v.locate(i)
		xs := make([]float64, v.K)
		for k := range xs {
			xs[k] = t["x"][v.At(s, k)]
		}
		if c.Family == "reduce" {
			return fmt.Sprintf("slice %d, position %d: x=%v y=%v dy=%v", s, j, xs, t["y"][s], t["dy"][s])
		}
		ys, gs := make([]float64, v.K), make([]float64, v.K)
		for k := range xs {
			ys[k], gs[k] = t["y"][v.At(s, k)], t["dy"][v.At(s, k)]
		}
		return fmt.Sprintf("slice %d, position %d: x=%v y=%v dy=%v", s, j, xs, ys, gs)
	}
	return fmt.Sprintf("x=%v", t["x"][i])
}

// CheckReference compares the float64 reference, rounded to each case's
// dtype, with every case of s: one Outcome per case. Where a case has Y64,
// PyTorch's float64 alternatives are compared with the reference computed
// from it.
func CheckReference(s *Set) []Outcome {
	out := make([]Outcome, len(s.Cases))
	for k, c := range s.Cases {
		o := &out[k]
		o.Case = c
		exp, err := c.Reference()
		var exp64 []Expect
		if err == nil && c.Y64 != nil {
			c64 := *c
			c64.Tensors = maps.Clone(c.Tensors)
			c64.Tensors["y"] = c.Y64
			exp64, err = c64.Reference()
		}
		if err != nil {
			o.Failf("%v", err)
			continue
		}
		for j, e := range exp {
			got := rounded(c.DType, e.Ref)
			var altGot []float64
			if exp64 != nil {
				altGot = rounded(c.DType, exp64[j].Ref)
			}
			c.Compare(o, e, got, altGot, "reference")
		}
	}
	return out
}

func rounded(dt dtype.DType, v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = dtype.Round(dt, x)
	}
	return out
}

// Verdict is what a report says of the case: its mismatches as errors;
// for a case in KnownOpen, no errors and a note with the count of its
// mismatches and the reason instead.
func (o *Outcome) Verdict() (errs []string, note string) {
	errs = o.Errors()
	if why, open := KnownOpen[o.Case.Name]; open {
		return nil, fmt.Sprintf("known open, %d mismatches: %s", len(errs), why)
	}
	return errs, ""
}

// Summary counts the cases that passed, failed, and failed but are in
// KnownOpen (open: not counted in fail), and the elements that matched
// PyTorch's float64 value only.
func Summary(outs []Outcome) (pass, fail, open, alt int) {
	for i := range outs {
		_, known := KnownOpen[outs[i].Case.Name]
		switch {
		case outs[i].OK():
			pass++
		case known:
			open++
		default:
			fail++
		}
		alt += outs[i].Alt
	}
	return pass, fail, open, alt
}

// Describe is the set's origin for reports: PyTorch's version, the device
// it ran on, and the file.
func (s *Set) Describe() string {
	dev := s.Device
	if s.DeviceName != "" {
		dev += " (" + s.DeviceName + ")"
	}
	return fmt.Sprintf("PyTorch %s on %s, seed %d, %d cases from %s", s.Torch, dev, s.Seed, len(s.Cases), s.Source)
}

// KnownOpen lists the cases of the generated vectors (and of the sample,
// by the same names) where the reference or the kernels do not match
// PyTorch yet, with the reason; the tests and selftest report them, with
// their count of mismatches (Verdict, Summary), rather than fail. Every
// other case must match.
var KnownOpen = map[string]string{}
