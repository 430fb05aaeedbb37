package conform

// The reduce cases: shapes, axes and layouts, and the data of each slice.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// ReduceCase is one shape, axis and memory layout of a reduction check.
type ReduceCase struct {
	Shape []int
	Axis  int
	// Correction for Var and Std.
	Correction float64
	// Layouts of x, y, dy, dx (y and dy are laid out in keepdim shape).
	Layouts [4]func([]int) Layout
	// Data replaces the suite's random slices where set: DataEqual or
	// DataSaturated.
	Data string
}

// The tie-heavy inputs of ReduceTieCases and ReduceTieEdgeCases.
const (
	// DataEqual: every element of a slice is the same value (prod: 0).
	DataEqual = "equal"
	// DataSaturated: a clamped input: max (min) is cut at the slice's 90th
	// (10th) percentile, so that at least a tenth of the slice equals y;
	// prod has a zero at every tenth position.
	DataSaturated = "saturated"
	// DataHalf: as DataSaturated at the median: at least half of the
	// slice equals y; prod has a zero at every other position.
	DataHalf = "half"
	// DataEnds: the slice's extreme (max, min) at its first and last
	// positions and nowhere else: one tie at each end; prod: zeros there.
	DataEnds = "ends"
	// DataFirst and DataLast: the slice's only extreme (prod: its only
	// zero) at its first or last position.
	DataFirst = "first"
	DataLast  = "last"
	// DataUnderflow: prod's elements of magnitude in [0.5, 0.75) with the
	// suite's signs, no zero, so that a long slice's product underflows
	// to ±0 (y/x then takes no division in the flat kernel); other ops keep
	// the suite's random slices.
	DataUnderflow = "underflow"
)

func (c ReduceCase) String() string {
	s := fmt.Sprintf("%v axis %d", c.Shape, c.Axis)
	if c.Correction != 1 {
		s += fmt.Sprintf(" c=%v", c.Correction)
	}
	for i, f := range c.Layouts {
		s += fmt.Sprintf(" %s:%s", [4]string{"x", "y", "dy", "dx"}[i], f(c.Shape).Name)
	}
	if c.Data != "" {
		s += " data:" + c.Data
	}
	return s
}

// tieShapes are the shapes of the tie-heavy cases: one slice of 2^24,
// four long rows, four long columns, 2^22 slices of four (along the inner
// and the outer axis) and 4096x4096 along both axes (its axis 0: the strip
// kernel, or the flat path). quick cuts every shape to 2^16 elements.
func tieShapes(quick bool) []struct {
	shape []int
	axis  int
} {
	long, side := 1<<22, 4096
	if quick {
		long, side = 1<<14, 256
	}
	return []struct {
		shape []int
		axis  int
	}{{[]int{4 * long}, 0}, {[]int{4, long}, 1}, {[]int{long, 4}, 0}, {[]int{long, 4}, 1}, {[]int{4, long}, 0},
		{[]int{side, side}, 0}, {[]int{side, side}, 1}}
}

// ReduceTieCases are the tie-heavy and long-slice regimes (tieShapes)
// with every element of a slice equal and with a tenth and a half of
// every slice saturated, contiguous.
func ReduceTieCases(quick bool) []ReduceCase {
	var cs []ReduceCase
	for _, data := range []string{DataEqual, DataSaturated, DataHalf} {
		for _, s := range tieShapes(quick) {
			cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Contiguous), Data: data})
		}
	}
	return cs
}

// ReduceTieEdgeCases are the tie edges over tieShapes, contiguous: one
// tie at each end of every slice, its only extreme (prod: zero) at its
// first or at its last position; then saturated slices with the operands
// one element off 16-byte alignment, where Run takes the row and col
// kernels (split: the stats kernel, then red_total and the apply pass's
// mend) in place of the flat and strip kernels.
func ReduceTieEdgeCases(quick bool) []ReduceCase {
	var cs []ReduceCase
	for _, data := range []string{DataEnds, DataFirst, DataLast} {
		for _, s := range tieShapes(quick) {
			cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Contiguous), Data: data})
		}
	}
	for _, data := range []string{DataSaturated, DataEnds} {
		for _, s := range tieShapes(quick) {
			cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Unaligned), Data: data})
		}
	}
	return cs
}

// ReduceTieSquareCases are the tie-heavy cases of 4096x4096 along axis 0
// (quick: 256x256), every tie input contiguous, and saturated and ended
// slices one element off 16-byte alignment.
func ReduceTieSquareCases(quick bool) []ReduceCase {
	side := 4096
	if quick {
		side = 256
	}
	var cs []ReduceCase
	for _, data := range []string{DataEqual, DataSaturated, DataHalf, DataEnds, DataFirst, DataLast} {
		cs = append(cs, ReduceCase{Shape: []int{side, side}, Correction: 1, Layouts: same4(Contiguous), Data: data})
	}
	for _, data := range []string{DataSaturated, DataEnds} {
		cs = append(cs, ReduceCase{Shape: []int{side, side}, Correction: 1, Layouts: same4(Unaligned), Data: data})
	}
	return cs
}

// ReduceUnderflowCases are prod's slices whose products underflow to ±0
// without a zero (DataUnderflow): one long slice, few long rows, few long
// columns of 2, 4 and 8 (the flat layouts of every dtype), 256x256 along
// both axes; contiguous, and one element off 16-byte alignment (the row
// and col kernels). quick cuts the long ones to 2^14 elements.
func ReduceUnderflowCases(quick bool) []ReduceCase {
	long := 1 << 18
	if quick {
		long = 1 << 14
	}
	var cs []ReduceCase
	for _, l := range [](func([]int) Layout){Contiguous, Unaligned} {
		for _, s := range []struct {
			shape []int
			axis  int
		}{{[]int{4 * long}, 0}, {[]int{4, long}, 1}, {[]int{long, 2}, 0}, {[]int{long, 4}, 0}, {[]int{long, 8}, 0},
			{[]int{256, 256}, 0}, {[]int{256, 256}, 1}} {
			cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(l), Data: DataUnderflow})
		}
	}
	return cs
}

// tieSlice rewrites x (one slice, already random) as data asks.
func tieSlice(op, data string, x []float64) {
	switch {
	case data == DataEqual && op == "prod":
		clear(x)
	case data == DataEqual:
		for i := range x {
			x[i] = x[0]
		}
	case data == DataSaturated && op == "prod":
		for j := 3; j < len(x); j += 10 {
			x[j] = 0
		}
	case data == DataHalf && op == "prod":
		for j := 1; j < len(x); j += 2 {
			x[j] = 0
		}
	case data == DataUnderflow && op == "prod":
		for i, v := range x {
			f := math.Abs(v) * 64
			x[i] = math.Copysign(0.5+0.25*(f-math.Floor(f)), v)
		}
	case (data == DataEnds || data == DataFirst || data == DataLast) && op == "prod":
		if data != DataLast {
			x[0] = 0
		}
		if data != DataFirst {
			x[len(x)-1] = 0
		}
	case data == DataEnds || data == DataFirst || data == DataLast:
		// One past the extreme: every dtype's rounding keeps it apart
		// from the other elements (at most about 12 in magnitude).
		e := beyond(op, x)
		if data != DataLast {
			x[0] = e
		}
		if data != DataFirst {
			x[len(x)-1] = e
		}
	case data == DataSaturated || data == DataHalf:
		sorted := slices.Clone(x)
		slices.Sort(sorted)
		q := sorted[(len(x)-1)*9/10]
		if op == "min" {
			q = sorted[(len(x)-1)/10]
		}
		if data == DataHalf {
			q = sorted[(len(x)-1)/2]
		}
		for i, v := range x {
			if op == "min" {
				x[i] = max(v, q)
			} else {
				x[i] = min(v, q)
			}
		}
	}
}

func same4(f func([]int) Layout) [4]func([]int) Layout {
	return [4]func([]int) Layout{f, f, f, f}
}

// ReduceCases is the suite: every axis position of small shapes in every
// layout kind (row and col mappings, strided slices), rows whose lengths
// leave vector heads and tails or overflow the register cache, the split
// paths (few long slices, along the inner and an outer axis), empty
// tensors, and var/std corrections with N - c <= 0. quick trims it.
func ReduceCases(quick bool) []ReduceCase {
	var cs []ReduceCase
	type sa struct {
		shape []int
		axis  int
	}
	small := []sa{
		{[]int{1}, 0}, {[]int{5}, 0}, {[]int{33}, -1}, {[]int{1025}, 0},
		{[]int{3, 5, 7}, 0}, {[]int{3, 5, 7}, 1}, {[]int{3, 5, 7}, 2},
		{[]int{2, 1, 33}, 1}, {[]int{17, 31}, 0}, {[]int{17, 31}, 1},
		{[]int{4, 3, 2, 5}, 2}, {[]int{2, 3, 1, 2, 3, 1, 2, 2}, 4}, {[]int{2, 3, 1, 2, 3, 1, 2, 2}, -1},
		{[]int{7, 0, 3}, 1}, {[]int{0, 4}, 1}, {[]int{6, 1}, 1},
	}
	if quick {
		small = []sa{{[]int{1}, 0}, {[]int{33}, 0}, {[]int{3, 5, 7}, 1}, {[]int{17, 31}, 0}, {[]int{17, 31}, 1}, {[]int{7, 0, 3}, 1}}
	}
	mixed := [4]func([]int) Layout{Transposed, Padded, Contiguous, Padded}
	for _, s := range small {
		cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Contiguous)},
			ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Unaligned)},
			ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Padded)},
			ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Transposed)},
			ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: mixed})
	}
	large := []sa{
		{[]int{9, 1000}, 1},       // row mapping, several rows per block, vector heads
		{[]int{300, 67}, 1},       // odd rows: every alignment of the row start
		{[]int{4, 4099}, 1},       // rows longer than the register cache
		{[]int{3, 20000}, 1},      // row split into chunks (stats + apply)
		{[]int{4000, 5}, 0},       // col split along an outer axis
		{[]int{2048, 3, 2}, 0},    // col split, strided slices
		{[]int{64, 130, 40}, 1},   // col mapping without a split
		{[]int{1<<20 + 3}, 0},     // one long slice, many chunks
		{[]int{2, 3, 5000, 2}, 2}, // col split with two slice dims
		{[]int{1000, 600}, 0},     // col split, five slice blocks, the last one partial
		{[]int{2048, 1024}, 0},    // col split; unaligned: more tiles than blocks fit
	}
	if quick {
		large = []sa{{[]int{300, 67}, 1}, {[]int{3, 20000}, 1}, {[]int{4000, 5}, 0}, {[]int{1000, 600}, 0}}
	}
	for _, s := range large {
		cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Contiguous)},
			ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Unaligned)})
		if !quick && product(s.shape) < 1<<17 {
			cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Transposed)},
				ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: mixed})
		}
	}
	// Operands 8- but not 16-byte aligned: the col mapping's 8-byte
	// accesses, unsplit and split along the axis.
	for _, sh := range []func([]int) Layout{Shifted(2), Shifted(4)} {
		cs = append(cs, ReduceCase{Shape: []int{64, 130, 40}, Axis: 1, Correction: 1, Layouts: same4(sh)},
			ReduceCase{Shape: []int{3000, 16}, Axis: 0, Correction: 1, Layouts: same4(sh)})
	}
	// Corrections: c = 0, N == c, N < c (fractional), N == 1 with c = 1.
	for _, c := range []struct {
		shape []int
		axis  int
		c     float64
	}{{[]int{5, 3}, 0, 0}, {[]int{3, 4}, 1, 4}, {[]int{2, 6}, 1, 7.5}, {[]int{6, 1}, 1, 1}, {[]int{3, 4}, 1, 2.5}} {
		cs = append(cs, ReduceCase{Shape: c.shape, Axis: c.axis, Correction: c.c, Layouts: same4(Contiguous)})
	}
	return cs
}

// ReduceStripCases are shapes the strip kernel can cut (an outer axis whose
// inner extent is a multiple of 16 elements, 64 or 32 bytes of every row
// per strip): long slices (4097 and 3000 positions, 32-byte strips), several
// outer indices, one position, and N - c <= 0; contiguous (the strip
// kernel, where Run may take it), unaligned and padded (the other paths).
func ReduceStripCases(quick bool) []ReduceCase {
	type sc struct {
		shape []int
		axis  int
		c     float64
	}
	shapes := []sc{
		{[]int{4097, 32}, 0, 1}, {[]int{2, 700, 48}, 1, 1}, {[]int{1, 64}, 0, 1}, {[]int{3, 5, 64}, 1, 5},
		{[]int{6, 32}, 0, 7.5}, {[]int{2048, 1024}, 0, 1}, {[]int{3000, 16}, 0, 0}, {[]int{4, 3, 1000, 2, 16}, 2, 1},
	}
	if quick {
		shapes = []sc{{[]int{4097, 32}, 0, 1}, {[]int{2, 700, 48}, 1, 1}, {[]int{1, 64}, 0, 1}, {[]int{6, 32}, 0, 7.5}}
	}
	var cs []ReduceCase
	for _, s := range shapes {
		cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: s.c, Layouts: same4(Contiguous)},
			ReduceCase{Shape: s.shape, Axis: s.axis, Correction: s.c, Layouts: same4(Unaligned)})
		if product(s.shape) < 1<<17 {
			cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: s.c, Layouts: same4(Padded)})
		}
	}
	return cs
}

// beyond is a value past the slice's extreme for max (above) or min (below).
func beyond(op string, x []float64) float64 {
	e := x[0]
	for _, v := range x {
		if (op == "max") == (v > e) {
			e = v
		}
	}
	if op == "max" {
		return e + 1
	}
	return e - 1
}

// reduceSlice draws the x values of one slice: mostly moderate random
// values, with each op's edge cases on some slices (ties, NaN, inf, zeros,
// all-equal slices, -inf runs).
func reduceSlice(rng *rand.Rand, op string, x []float64) {
	k := len(x)
	flavor := rng.IntN(10)
	for i := range x {
		switch op {
		case "prod":
			// Near 1 so that long products stay in range.
			x[i] = 1 + rng.NormFloat64()/(4*math.Sqrt(float64(k)))
			if rng.IntN(4) == 0 {
				x[i] = -x[i]
			}
		case "logsumexp":
			x[i] = rng.NormFloat64() * 3
		case "var", "std":
			x[i] = rng.NormFloat64() + 0.5
		default:
			x[i] = rng.NormFloat64() * 2
		}
	}
	at := func() int { return rng.IntN(k) }
	switch op {
	case "max", "min":
		switch flavor {
		case 0, 1: // ties of the extreme among few distinct values
			for i := range x {
				x[i] = float64(rng.IntN(3))
			}
		case 2:
			x[at()] = math.NaN()
		case 3:
			x[at()] = math.Inf(1)
			x[at()] = math.Inf(-1)
		case 4: // two copies of a new extreme, apart: the ties of a split
			// slice lie in few of its chunks
			e := beyond(op, x)
			x[at()], x[at()] = e, e
		case 5: // three copies, two of them adjacent: a split slice
			// has chunks with one and two ties, or all three in one
			e, i := beyond(op, x), at()
			x[i], x[(i+1)%k], x[at()] = e, e, e
		}
	case "prod":
		switch flavor {
		case 0, 1:
			x[at()] = 0
		case 2:
			x[at()], x[at()] = 0, 0
		case 3:
			x[at()] = math.Copysign(0, -1)
		case 4:
			x[at()] = math.NaN()
		case 5: // the ends of the float range (the kernels' fast quotient
			// hands such elements to the exact division)
			x[at()] *= 0x1p126
			x[at()] *= 0x1p-126
		}
	case "norm2":
		switch flavor {
		case 0, 1:
			for i := range x {
				x[i] = 0
			}
		case 2:
			x[at()] = math.Inf(-1)
		case 3:
			x[at()] = math.NaN()
		case 4, 5: // near the ends of the float range, and a zero
			sc := 0x1p120
			if flavor == 5 {
				sc = 0x1p-135
			}
			for i := range x {
				x[i] *= sc
			}
			x[at()] = 0
		}
	case "logsumexp":
		switch flavor {
		case 0:
			for i := range x {
				x[i] = math.Inf(-1)
			}
		case 1:
			x[at()] = math.Inf(1)
		case 2:
			x[at()] = math.Inf(-1)
		case 3:
			for i := range x {
				x[i] += 100
			}
		}
	case "var", "std":
		switch flavor {
		case 0, 1: // zero variance: std's y == 0 select. An integer value,
			// whose sums over any order are exact (up to 2^21 positions in
			// f32), so that the mean is exactly v: with N == c, where the
			// factor is +inf, a mean one bit off turns the NaN of x == mean
			// into ±inf, and which order the kernels sum in is theirs.
			v := math.Round(x[0])
			for i := range x {
				x[i] = v
			}
		case 2:
			x[at()] = math.NaN()
		}
	case "sum", "mean":
		if flavor == 0 {
			x[at()] = math.Inf(1)
		}
	}
}

// ReduceFlatRowsCases are [k, I] along axis 0 (and [2, k, I] along axis 1:
// two outer indices) for I in {2, 3, 4, 8}, where the flat kernel's packs
// hold rows of several slices for I dividing a pack's elements (2 and 4
// for f16/bf16, 2 for f32): k at a multiple of 4 (every pack whole) and
// one off it either side (k*I no multiple of a pack: the row and col
// kernels), long ones (2^20 rows; quick: 2^14), and, with ties, the
// tie-heavy data (DataEqual, DataSaturated), short and long; contiguous,
// with dy alone unaligned and padded (Run keeps those off the flat
// kernel); and, for var and std, corrections with N - c <= 0.
func ReduceFlatRowsCases(quick, ties bool) []ReduceCase {
	long := 1 << 20
	if quick {
		long = 1 << 14
	}
	var cs []ReduceCase
	add := func(shape []int, axis int, data string, ls [4]func([]int) Layout) {
		cs = append(cs, ReduceCase{Shape: shape, Axis: axis, Correction: 1, Layouts: ls, Data: data})
	}
	dyOdd := [4]func([]int) Layout{Contiguous, Contiguous, Unaligned, Contiguous}
	for _, inner := range []int{2, 3, 4, 8} {
		for _, k := range []int{4095, 4096, 4097} {
			add([]int{k, inner}, 0, "", same4(Contiguous))
			add([]int{2, k, inner}, 1, "", same4(Contiguous))
		}
		add([]int{4096, inner}, 0, "", dyOdd)
		add([]int{1000, inner}, 0, "", same4(Padded))
		if inner != 3 {
			add([]int{long, inner}, 0, "", same4(Contiguous))
		}
		for _, data := range []string{DataEqual, DataSaturated} {
			if ties {
				add([]int{24, inner}, 0, data, same4(Contiguous))
				add([]int{2, 4096, inner}, 1, data, same4(Contiguous))
			}
		}
	}
	if ties {
		for _, data := range []string{DataEqual, DataSaturated} {
			add([]int{long, 4}, 0, data, same4(Contiguous))
			add([]int{long, 2}, 0, data, same4(Contiguous))
		}
	}
	add([]int{long + 1, 4}, 0, "", same4(Contiguous))
	// k = 1 and 2: a pack of bf16 holds every row of 8 (4) slices.
	add([]int{1, 8}, 0, "", same4(Contiguous))
	add([]int{2, 4}, 0, "", same4(Contiguous))
	// var and std: N == c and N < c (fractional) on the rows layout.
	cs = append(cs, ReduceCase{Shape: []int{8, 4}, Axis: 0, Correction: 8, Layouts: same4(Contiguous)},
		ReduceCase{Shape: []int{8, 2}, Axis: 0, Correction: 9.5, Layouts: same4(Contiguous)})
	return cs
}
