package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

// `baracuda bench -shapes` is the shape-and-data set of bench/README.md
// ("Shapes and data"): every reduce and scan op, f32 and bf16, over seven
// (shape, axis) layouts of 2^24 elements, each with three kinds of data:
//
//	normal  x ~ N(0,1)
//	grid    N(0,1) rounded to multiples of 1/8: many equal values
//	clamp   each slice clamped at its own 90th percentile, so that at least
//	        10% of every slice equals the slice's max
//
// prod and cumprod take values near 1 instead (1 + 0.001*v for the v
// above; on the grid, multiples of 1/8000 around 1), and their clamp is
// ReLU-like zeros: every 10th element of each slice (positions j%10 == 3)
// is 0. The saved y is the true forward of the stored x and dy ~ N(0,1);
// the traffic model is the default set's (bench_families.go).
//
// 588 cases of 2^24 elements make host work matter: the base arrays of a
// dtype (normal, grid, their near-one forms and dy) are drawn once and
// reused by every case of that dtype, the clamped x of one layout is kept
// while the cases of that layout run (the case list is ordered dtype,
// layout, data, op for this), and y is computed on every CPU.

// shapesLayout is one (shape, axis) of the set.
type shapesLayout struct {
	shape []int
	axis  int
}

// shapesLayouts are the set's layouts, all of 2^24 elements: one long
// slice, four long slices (contiguous and strided), 2^22 slices of 4
// (contiguous and strided), 4096 slices of 4096 both ways.
var shapesLayouts = []shapesLayout{
	{[]int{1 << 24}, 0},
	{[]int{4, 1 << 22}, 1},
	{[]int{1 << 22, 4}, 0},
	{[]int{1 << 22, 4}, 1},
	{[]int{4, 1 << 22}, 0},
	{[]int{4096, 4096}, 0},
	{[]int{4096, 4096}, 1},
}

// shapesData are the kinds of input data.
var shapesData = []string{"normal", "grid", "clamp"}

// shapesSpec is one case of the set: a reduce op or a scan op (the other
// is zero), a dtype, a layout and a data kind.
type shapesSpec struct {
	reduce ops.ReduceOp
	scan   ops.ScanOp
	dt     dtype.DType
	shape  []int
	axis   int
	data   string
}

func (s shapesSpec) family() string {
	if s.scan != 0 {
		return "scan"
	}
	return "reduce"
}

func (s shapesSpec) op() string {
	if s.scan != 0 {
		return s.scan.String()
	}
	return s.reduce.String()
}

// nearOne reports whether x is drawn near 1 (products).
func (s shapesSpec) nearOne() bool { return s.reduce == ops.ReduceProd || s.scan == ops.ScanCumprod }

func (s shapesSpec) name() string {
	dims := make([]string, len(s.shape))
	for i, d := range s.shape {
		dims[i] = strconv.Itoa(d)
	}
	return fmt.Sprintf("shapes/%s/%s/%s/%s/axis%d/%s", s.family(), s.op(), s.dt.Suffix(), strings.Join(dims, "x"), s.axis, s.data)
}

// elems is the minimal-traffic model of the default reduce and scan cases.
func (s shapesSpec) elems() int64 {
	n := numel(s.shape)
	if s.scan != 0 {
		return n * map[ops.ScanOp]int64{ops.ScanCumsum: 2, ops.ScanCummax: 3, ops.ScanCummin: 3, ops.ScanCumprod: 4, ops.ScanLogcumsumexp: 4}[s.scan]
	}
	m := n / int64(s.shape[s.axis])
	if s.reduce == ops.ReduceSum || s.reduce == ops.ReduceMean {
		return n + m
	}
	return 2*n + 2*m
}

// shapesSpecs lists the set in run order: dtype, layout, data, then the
// reduce ops and the scan ops.
func shapesSpecs() []shapesSpec {
	var out []shapesSpec
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, l := range shapesLayouts {
			for _, data := range shapesData {
				for _, op := range ops.ReduceOps() {
					out = append(out, shapesSpec{reduce: op, dt: dt, shape: l.shape, axis: l.axis, data: data})
				}
				for _, op := range ops.ScanOps() {
					out = append(out, shapesSpec{scan: op, dt: dt, shape: l.shape, axis: l.axis, data: data})
				}
			}
		}
	}
	return out
}

// shapesCases are the set's bench cases.
func shapesCases() []benchCase {
	specs := shapesSpecs()
	cases := make([]benchCase, len(specs))
	for i, s := range specs {
		cases[i] = benchCase{name: s.name(), op: s.op(), dt: s.dt, data: s.data, elems: s.elems(),
			setup: func(b *benchEnv) (func() error, error) { return setupShapes(b, s) }}
	}
	return cases
}

func setupShapes(b *benchEnv, s shapesSpec) (func() error, error) {
	x, y, dy := shapesHostCache.inputs(s)
	if s.scan != 0 {
		return scanRun(b, s.scan, s.dt, s.shape, s.axis, x, y, dy)
	}
	return reduceRun(b, ops.ReduceDesc{Op: s.reduce, DType: s.dt, Shape: s.shape, Axis: s.axis, Correction: 1},
		keepdim(s.shape, s.axis), x, y, dy)
}

// shapesElems is the element count of every layout.
const shapesElems = 1 << 24

// shapesArray is one host array: its values (rounded to the dtype) and
// their encoding.
type shapesArray struct {
	vals []float64
	enc  []byte
}

// shapesHost holds the host inputs of one dtype: the base arrays by name,
// the clamped x of the last layout asked for and the scratch y.
type shapesHost struct {
	draws    map[uint64][]float64 // normalDraws by seed, for every dtype
	dt       dtype.DType
	bases    map[string]*shapesArray
	clampKey string
	clamp    *shapesArray
	// y of the last case (its first m or n elements); reused, so that no
	// case pays for fresh pages.
	y shapesArray
}

// shapesHostCache serves the cases of one run, one after the other.
var shapesHostCache shapesHost

// inputs returns the encoded x, y and dy of case s. y is valid until the
// next call.
func (h *shapesHost) inputs(s shapesSpec) (x, y, dy []byte) {
	xa := h.x(s)
	if h.y.vals == nil {
		h.y = shapesArray{make([]float64, shapesElems), make([]byte, shapesElems*h.dt.Size())}
	}
	var yv []float64
	if s.scan != 0 {
		yv = h.y.vals[:len(xa.vals)]
		scanForwardTo(s.scan, xa.vals, s.shape, s.axis, yv)
	} else {
		yv = h.y.vals[:ref.NewAxisSlices(s.shape, s.axis).Count()]
		reduceForwardTo(s.reduce, xa.vals, s.shape, s.axis, yv)
	}
	y = h.y.enc[:len(yv)*h.dt.Size()]
	encodeTo(h.dt, yv, y)
	return xa.enc, y, h.base("dy").enc[:len(y)]
}

// x is the stored x of case s.
func (h *shapesHost) x(s shapesSpec) *shapesArray {
	if h.dt != s.dt || h.bases == nil {
		*h = shapesHost{draws: h.draws, dt: s.dt, bases: map[string]*shapesArray{}}
	}
	prefix := ""
	if s.nearOne() {
		prefix = "near-"
	}
	if s.data != "clamp" {
		return h.base(prefix + s.data)
	}
	key := fmt.Sprintf("%s%v/%d", prefix, s.shape, s.axis)
	if h.clampKey != key {
		base := h.base(prefix + "normal").vals
		a := h.clamp
		if a == nil {
			a = &shapesArray{make([]float64, shapesElems), make([]byte, shapesElems*h.dt.Size())}
		}
		if s.nearOne() {
			zeroSlices(base, a.vals, s.shape, s.axis)
		} else {
			clampSlices(base, a.vals, s.shape, s.axis)
		}
		encodeTo(h.dt, a.vals, a.enc)
		h.clampKey, h.clamp = key, a
	}
	return h.clamp
}

// base returns a base array of h's dtype, made on first use: "normal",
// "grid", "near-normal", "near-grid" (x) or "dy".
func (h *shapesHost) base(name string) *shapesArray {
	if a := h.bases[name]; a != nil {
		return a
	}
	seed := uint64(1)
	if name == "dy" {
		seed = 2
	}
	f := map[string]func(float64) float64{
		"normal":      func(v float64) float64 { return v },
		"grid":        shapesGrid,
		"near-normal": func(v float64) float64 { return 1 + 0.001*v },
		"near-grid":   func(v float64) float64 { return 1 + 0.001*shapesGrid(v) },
		"dy":          func(v float64) float64 { return v },
	}[name]
	if h.draws == nil {
		h.draws = map[uint64][]float64{}
	}
	if h.draws[seed] == nil {
		h.draws[seed] = normalDraws(seed, shapesElems)
	}
	draws := h.draws[seed]
	vals := make([]float64, len(draws))
	parallel(len(vals), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			vals[i] = dtype.Round(h.dt, f(draws[i]))
		}
	})
	a := &shapesArray{vals, make([]byte, len(vals)*h.dt.Size())}
	encodeTo(h.dt, vals, a.enc)
	if name == "dy" {
		a.vals = nil // only the encoding is uploaded
	}
	h.bases[name] = a
	return a
}

// shapesGrid rounds v to a multiple of 1/8 (ties to even, as torch.round).
func shapesGrid(v float64) float64 { return math.RoundToEven(v*8) / 8 }

// normalDraws is n draws of N(0,1) from a generator seeded with seed: the
// same numbers for every dtype.
func normalDraws(seed uint64, n int) []float64 {
	rng := rand.New(rand.NewPCG(seed, 37))
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = rng.NormFloat64()
	}
	return vals
}

// encodeTo writes vals encoded as dt (dtype.Encode) into enc, on every CPU.
func encodeTo(dt dtype.DType, vals []float64, enc []byte) {
	size := dt.Size()
	parallel(len(vals), func(lo, hi int) {
		e := enc[lo*size : hi*size]
		switch dt {
		case dtype.F32:
			for i, v := range vals[lo:hi] {
				binary.LittleEndian.PutUint32(e[4*i:], math.Float32bits(float32(v)))
			}
		case dtype.BF16:
			for i, v := range vals[lo:hi] {
				binary.LittleEndian.PutUint16(e[2*i:], dtype.BF16FromFloat32(float32(v)))
			}
		default:
			copy(e, dtype.Encode(dt, vals[lo:hi]))
		}
	})
}

// clampSlices writes into out vals with every slice along axis clamped at
// its own 90th percentile q: the value a sort of the slice places at index
// floor(0.9*(k-1)). At least k - floor(0.9*(k-1)) > k/10 elements of each
// slice are >= q, so at least 10% of every slice equals its max, q.
func clampSlices(vals, out []float64, shape []int, axis int) {
	at := 9 * (shape[axis] - 1) / 10
	forSlices(vals, out, shape, axis, func(_ int, in, o []float64) {
		copy(o, in)
		q := selectKth(o, at)
		for j, x := range in {
			o[j] = min(x, q)
		}
	})
}

// zeroSlices writes into out vals with the elements at positions
// j%10 == 3 of every slice along axis set to 0.
func zeroSlices(vals, out []float64, shape []int, axis int) {
	forSlices(vals, out, shape, axis, func(_ int, in, o []float64) {
		copy(o, in)
		for j := 3; j < len(o); j += 10 {
			o[j] = 0
		}
	})
}

// selectKth returns the value a sort of a (no NaN) places at index k,
// reordering a: Hoare's selection, linear time on average, where a sort of
// the 2^24-element slice would take seconds.
func selectKth(a []float64, k int) float64 {
	lo, hi := 0, len(a)-1
	for hi-lo >= 16 {
		mid := lo + (hi-lo)/2
		p := median3(a[lo], a[mid], a[hi])
		i, j := lo, hi
		for i <= j {
			for a[i] < p {
				i++
			}
			for a[j] > p {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default: // j < k < i: a[k] == p
			return a[k]
		}
	}
	for i := lo + 1; i <= hi; i++ { // insertion sort of the rest
		for j := i; j > lo && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
	return a[k]
}

func median3(a, b, c float64) float64 {
	if a > b {
		a, b = b, a
	}
	return max(a, min(b, c))
}
