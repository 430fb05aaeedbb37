// Package torchvec reads the PyTorch test vectors: small adversarial cases
// of every (family, op, dtype) whose gradients PyTorch's autograd computed,
// written by scripts/torch_vectors.py. The CPU tests compare the float64
// reference (internal/ref) with them, the GPU tests and `baracuda selftest`
// the kernels.
//
// # Format
//
// A vector file is one JSON object:
//
//	{"format": "baracuda-torch-vectors", "version": 1,
//	 "generator": "scripts/torch_vectors.py", "seed": 39,
//	 "torch": "2.11.0+cu128", "device": "cuda", "device_name": "NVIDIA H100 80GB HBM3",
//	 "cases": [CASE, ...]}
//
// device is where PyTorch ran ("cuda" or "cpu"). A CASE is
//
//	{"name": "reduce/max/bf16/rows", "family": "reduce", "op": "max", "dtype": "bf16",
//	 "shape": [11, 6], "out_shape": [11], "params": {...},
//	 "tensors": {"x": HEX, "y": HEX, "dy": HEX, "dx": HEX},
//	 "alt": {"dx": {"index": [3, 17], "bits": HEX}}, "y64": HEX}
//
// with, by family (shape is the input's; out_shape, where given, that of y
// and dy):
//
//	binary  op add sub mul div maximum minimum pow atan2 hypot lerp;
//	        params alpha (add, sub: y = a ± alpha*b, never 0) or weight
//	        (lerp); tensors dy, a, b and PyTorch's da, db, all of shape
//	reduce  op sum mean max min prod norm2 logsumexp var std; params axis
//	        (may be negative), keepdim, correction (var, std); tensors x
//	        and dx of shape, y and dy of out_shape (the axis set to 1 or
//	        removed)
//	scan    op cumsum cumprod cummax cummin logcumsumexp; params axis,
//	        reverse (the forward ran from the end of the axis); tensors
//	        dy, x, y, dx of shape
//	lppool  op lp_pool1d ([N, C, L]) or lp_pool2d ([N, C, H, W]); params
//	        p, kernel and stride ([k] or [kh, kw]), ceil_mode; tensors x
//	        and dx of shape, y and dy of out_shape
//
// y is PyTorch's forward output in the dtype, as autograd saved it. A HEX
// string holds a tensor's elements in row-major order, each the dtype's bit
// pattern as fixed-width lower-case hex (4 digits for f16 and bf16, 8 for
// f32, 16 for f64).
//
// alt lists, per gradient, the elements where PyTorch's value in the dtype
// comes from its own rounding between the ops of its backward formula (a
// product overflowing in f16, a sum of squares rounding to inf, a
// subnormal intermediate): the generator also runs each case in float64
// from the same rounded inputs, and where that value, rounded to the
// dtype, differs in kind (NaN, ±inf, zero, finite) or by more than two
// epsilons of the dtype, it records it here; y64, in cases that have alt
// entries and a y, is that run's forward output in float64 (16 hex digits
// an element). The library computes each formula in opmath and rounds
// once, so at those elements either value is PyTorch's answer. A file may
// also hold "notes", strings the generator left (cases it skipped).
package torchvec

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"

	"github.com/baracuda-go/baracuda/dtype"
)

// The vector files, embedded so that test binaries and `baracuda selftest`
// carry them to GPU hosts.
//
//go:embed vectors
var files embed.FS

const (
	// File is the generated vectors' path in the repository.
	File = "internal/torchvec/vectors/torch_vectors.json"
	// SampleFile is the hand-made sample: a few cases whose values come
	// from the formulas of docs/semantics.md, in the same format, which
	// the readers and comparisons are tested on.
	SampleFile = "internal/torchvec/vectors/sample_vectors.json"
	// PathEnv names a vector file to read instead of the embedded one, so
	// that a test binary built before the file was generated can use it.
	PathEnv = "BARACUDA_TORCH_VECTORS"
	// Generate is the command, run from the repository root on a host
	// with PyTorch (a GPU if there is one), that writes File.
	Generate = "python3 scripts/torch_vectors.py"

	formatName    = "baracuda-torch-vectors"
	formatVersion = 1
)

// ErrMissing is wrapped by Load's error when no vector file exists.
var ErrMissing = errors.New("torchvec: the PyTorch vectors have not been generated")

// Set is one vector file.
type Set struct {
	Generator  string
	Seed       int64
	Torch      string // PyTorch's version
	Device     string // "cuda" or "cpu": where PyTorch computed the gradients
	DeviceName string
	Source     string // where the file was read from
	Cases      []*Case
}

// Case is one tensor of one (family, op, dtype) with PyTorch's gradients.
type Case struct {
	Name     string
	Family   string // "binary", "reduce", "scan" or "lppool"
	Op       string
	DType    dtype.DType
	Shape    []int // the input's
	OutShape []int // y and dy (reduce, lppool); nil elsewhere
	Params   Params
	// Tensors by name, decoded from their bit patterns (exact).
	Tensors map[string][]float64
	// Alt: per gradient, element index -> PyTorch's float64 value rounded
	// to the dtype, where it differs from its value in the dtype (see the
	// package comment).
	Alt map[string]map[int]float64
	// Y64 is the float64 run's forward output, which its Alt values came
	// from (nil without Alt or y).
	Y64 []float64
}

// Params are the case's op parameters; each family reads its own.
type Params struct {
	Alpha      float64 `json:"alpha"`      // binary add and sub
	Weight     float64 `json:"weight"`     // binary lerp
	Axis       int     `json:"axis"`       // reduce, scan
	Keepdim    bool    `json:"keepdim"`    // reduce
	Correction float64 `json:"correction"` // reduce var and std
	Reverse    bool    `json:"reverse"`    // scan
	P          float64 `json:"p"`          // lppool
	Kernel     []int   `json:"kernel"`     // lppool: [k] or [kh, kw]
	Stride     []int   `json:"stride"`     // lppool
	CeilMode   bool    `json:"ceil_mode"`  // lppool
}

type fileJSON struct {
	Format     string      `json:"format"`
	Version    int         `json:"version"`
	Generator  string      `json:"generator"`
	Seed       int64       `json:"seed"`
	Torch      string      `json:"torch"`
	Device     string      `json:"device"`
	DeviceName string      `json:"device_name"`
	Cases      []*caseJSON `json:"cases"`
}

type caseJSON struct {
	Name     string             `json:"name"`
	Family   string             `json:"family"`
	Op       string             `json:"op"`
	DType    string             `json:"dtype"`
	Shape    []int              `json:"shape"`
	OutShape []int              `json:"out_shape"`
	Params   Params             `json:"params"`
	Tensors  map[string]string  `json:"tensors"`
	Alt      map[string]altJSON `json:"alt"`
	Y64      string             `json:"y64"`
}

type altJSON struct {
	Index []int  `json:"index"`
	Bits  string `json:"bits"`
}

// Load returns the generated vectors: the file $BARACUDA_TORCH_VECTORS
// names where it is set, else the copy of File embedded at build time.
// Where neither exists the error wraps ErrMissing and says how to make it.
func Load() (*Set, error) {
	if path := os.Getenv(PathEnv); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("torchvec: %s=%s: %w", PathEnv, path, err)
		}
		return Parse(data, path)
	}
	data, err := files.ReadFile("vectors/torch_vectors.json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is missing. Generate it on a host with PyTorch (CUDA if it has a GPU) "+
			"by running `%s` from the repository root, then commit it and rebuild, or point %s at it "+
			"to use it with a binary built before", ErrMissing, File, Generate, PathEnv)
	}
	if err != nil {
		return nil, fmt.Errorf("torchvec: %w", err)
	}
	return Parse(data, File+" (embedded)")
}

// LoadSample returns the hand-made sample (SampleFile).
func LoadSample() (*Set, error) {
	data, err := files.ReadFile("vectors/sample_vectors.json")
	if err != nil {
		return nil, fmt.Errorf("torchvec: %w", err)
	}
	return Parse(data, SampleFile+" (embedded)")
}

// Parse decodes a vector file read from source (named in errors) and
// checks that every case is complete: a known family, op and dtype, the
// tensors its family needs, each with as many elements as its shape.
func Parse(data []byte, source string) (*Set, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("torchvec: %s: %w", source, err)
	}
	if f.Format != formatName || f.Version != formatVersion {
		return nil, fmt.Errorf("torchvec: %s: format %q version %d, want %q version %d", source, f.Format, f.Version,
			formatName, formatVersion)
	}
	s := &Set{Generator: f.Generator, Seed: f.Seed, Torch: f.Torch, Device: f.Device, DeviceName: f.DeviceName,
		Source: source}
	names := map[string]bool{}
	for i, cj := range f.Cases {
		c, err := cj.decode()
		if err != nil {
			return nil, fmt.Errorf("torchvec: %s: case %d (%q): %w", source, i, cj.Name, err)
		}
		if names[c.Name] {
			return nil, fmt.Errorf("torchvec: %s: case %d: name %q is used twice", source, i, c.Name)
		}
		names[c.Name] = true
		s.Cases = append(s.Cases, c)
	}
	return s, nil
}

// families lists each family's ops and tensors: inputs first, then the
// gradients; "out" marks the tensors of out_shape.
var families = map[string]struct {
	ops     []string
	tensors []string
	grads   []string
	out     map[string]bool
}{
	"binary": {ops: []string{"add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2", "hypot", "lerp"},
		tensors: []string{"dy", "a", "b", "da", "db"}, grads: []string{"da", "db"}},
	"reduce": {ops: []string{"sum", "mean", "max", "min", "prod", "norm2", "logsumexp", "var", "std"},
		tensors: []string{"x", "y", "dy", "dx"}, grads: []string{"dx"}, out: map[string]bool{"y": true, "dy": true}},
	"scan": {ops: []string{"cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"},
		tensors: []string{"x", "y", "dy", "dx"}, grads: []string{"dx"}},
	"lppool": {ops: []string{"lp_pool1d", "lp_pool2d"},
		tensors: []string{"x", "y", "dy", "dx"}, grads: []string{"dx"}, out: map[string]bool{"y": true, "dy": true}},
}

// Grads names the case's gradients, the outputs compared: da and db of
// binary ops, dx of the others.
func (c *Case) Grads() []string { return families[c.Family].grads }

func (cj *caseJSON) decode() (*Case, error) {
	fam, ok := families[cj.Family]
	if !ok {
		return nil, fmt.Errorf("family %q is not one of binary, reduce, scan, lppool", cj.Family)
	}
	known := false
	for _, op := range fam.ops {
		known = known || op == cj.Op
	}
	if !known {
		return nil, fmt.Errorf("op %q is not a %s op %v", cj.Op, cj.Family, fam.ops)
	}
	dt, err := dtype.Parse(cj.DType)
	if err != nil {
		return nil, err
	}
	c := &Case{Name: cj.Name, Family: cj.Family, Op: cj.Op, DType: dt, Shape: cj.Shape, OutShape: cj.OutShape,
		Params: cj.Params, Tensors: map[string][]float64{}, Alt: map[string]map[int]float64{}}
	if c.Name == "" {
		return nil, errors.New("the case has no name")
	}
	if len(c.Shape) == 0 && c.Family != "binary" {
		return nil, fmt.Errorf("shape %v: a %s case needs rank 1 or more", c.Shape, c.Family)
	}
	if fam.out != nil && cj.OutShape == nil {
		return nil, fmt.Errorf("out_shape is missing (the shape of y and dy)")
	}
	for _, name := range fam.tensors {
		h, ok := cj.Tensors[name]
		if !ok {
			return nil, fmt.Errorf("tensor %q is missing (a %s case has %v)", name, c.Family, fam.tensors)
		}
		shape := c.Shape
		if fam.out[name] {
			shape = c.OutShape
		}
		n, err := numel(shape)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		v, err := decodeHex(dt, h, n)
		if err != nil {
			return nil, fmt.Errorf("tensor %q (shape %v): %w", name, shape, err)
		}
		c.Tensors[name] = v
	}
	for name, a := range cj.Alt {
		g, ok := c.Tensors[name]
		if !ok || fam.out[name] || !c.isGrad(name) {
			return nil, fmt.Errorf("alt names %q, which is not a gradient of the case (%v)", name, fam.grads)
		}
		v, err := decodeHex(dt, a.Bits, len(a.Index))
		if err != nil {
			return nil, fmt.Errorf("alt %q: %w", name, err)
		}
		m := map[int]float64{}
		for k, i := range a.Index {
			if i < 0 || i >= len(g) {
				return nil, fmt.Errorf("alt %q: index %d is outside the %d elements", name, i, len(g))
			}
			m[i] = v[k]
		}
		c.Alt[name] = m
	}
	if cj.Y64 != "" {
		y, ok := c.Tensors["y"]
		if !ok {
			return nil, fmt.Errorf("y64 is given, but a %s case has no y", c.Family)
		}
		if c.Y64, err = decodeHex(dtype.F64, cj.Y64, len(y)); err != nil {
			return nil, fmt.Errorf("y64: %w", err)
		}
	}
	return c, nil
}

func (c *Case) isGrad(name string) bool {
	for _, g := range c.Grads() {
		if g == name {
			return true
		}
	}
	return false
}

func numel(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 || d > 1<<24 {
			return 0, fmt.Errorf("dim %d of shape %v is out of [0, 2^24]", d, shape)
		}
		n *= d
		if n > 1<<24 {
			return 0, fmt.Errorf("shape %v has more than 2^24 elements", shape)
		}
	}
	return n, nil
}

// hexDigits is the width of one element's bit pattern.
func hexDigits(dt dtype.DType) int { return 2 * dt.Size() }

// decodeHex reads n elements of dt from their bit patterns in hex.
func decodeHex(dt dtype.DType, h string, n int) ([]float64, error) {
	w := hexDigits(dt)
	if len(h) != n*w {
		return nil, fmt.Errorf("%d hex digits for %d %s elements, want %d (%d each)", len(h), n, dt, n*w, w)
	}
	out := make([]float64, n)
	for i := range out {
		b, err := strconv.ParseUint(h[i*w:(i+1)*w], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out[i] = fromBits(dt, b)
	}
	return out, nil
}

// fromBits is the value of a storage bit pattern of dt.
func fromBits(dt dtype.DType, b uint64) float64 {
	switch dt {
	case dtype.F16:
		return float64(dtype.F16ToFloat32(uint16(b)))
	case dtype.BF16:
		return float64(dtype.BF16ToFloat32(uint16(b)))
	case dtype.F32:
		return float64(math.Float32frombits(uint32(b)))
	}
	return math.Float64frombits(b)
}
