// Package dtype describes the floating-point element types baracuda kernels
// operate on, and provides exact, allocation-free conversions between those
// storage formats and the host's float32/float64.
//
// The conversions are implemented with integer bit manipulation rather than
// through any platform intrinsic so that the results are identical on every
// GOOS/GOARCH (and with CGO_ENABLED=0): the host-side reference computations
// and the bytes uploaded to the device must agree bit for bit with what the
// GPU would produce with round-to-nearest-even.
package dtype

import (
	"fmt"
	"strings"
)

// DType identifies the element type of a tensor or kernel instantiation.
// The zero value is Invalid so that an uninitialised DType is never mistaken
// for a real type.
type DType uint8

// The supported element types. The numeric values are part of the API only in
// the sense that Invalid is zero; callers should not depend on the others.
const (
	// Invalid is the zero value and denotes "no type".
	Invalid DType = iota
	// F32 is IEEE 754 binary32 (CUDA float).
	F32
	// F16 is IEEE 754 binary16 (CUDA __half).
	F16
	// BF16 is bfloat16: the top 16 bits of a binary32 (CUDA __nv_bfloat16).
	BF16
	// F64 is IEEE 754 binary64 (CUDA double).
	F64
)

// All lists every valid DType, in a stable order suitable for iterating over
// kernel instantiations and test matrices. Callers must not modify it.
var All = []DType{F32, F16, BF16, F64}

// info holds the per-type constants. Keeping them in one table indexed by the
// DType value keeps the accessors branch-light and makes it impossible for the
// individual tables to drift out of sync.
type info struct {
	size    int
	suffix  string
	ctype   string
	opmath  string
	epsilon float64
}

var infos = [...]info{
	Invalid: {},
	F32:     {size: 4, suffix: "f32", ctype: "float", opmath: "f32", epsilon: 0x1p-23},
	F16:     {size: 2, suffix: "f16", ctype: "__half", opmath: "f32", epsilon: 0x1p-10},
	BF16:    {size: 2, suffix: "bf16", ctype: "__nv_bfloat16", opmath: "f32", epsilon: 0x1p-7},
	F64:     {size: 8, suffix: "f64", ctype: "double", opmath: "f64", epsilon: 0x1p-52},
}

// get returns the table entry for d, or the zero entry for values outside the
// table, so that every accessor degrades gracefully on garbage input.
func (d DType) get() *info {
	if int(d) < len(infos) {
		return &infos[d]
	}
	return &infos[Invalid]
}

// Size returns the storage size of one element in bytes (0 for invalid types).
func (d DType) Size() int { return d.get().size }

// Suffix returns the suffix used in kernel names ("f32", "f16", "bf16",
// "f64"), or "" for invalid types.
func (d DType) Suffix() string { return d.get().suffix }

// CType returns the CUDA C type spelling used when generating kernel source,
// or "" for invalid types.
func (d DType) CType() string { return d.get().ctype }

// OpMath returns the name of the accumulator type used when computing in d.
// Half-precision types are computed in float32 on the GPU (as PyTorch's
// "opmath" does), so their precision is reported as "f32". Invalid types
// yield "".
func (d DType) OpMath() string { return d.get().opmath }

// Valid reports whether d is one of the types listed in All.
func (d DType) Valid() bool { return d != Invalid && int(d) < len(infos) }

// String returns the kernel suffix for valid types, "invalid" for Invalid and
// "dtype(N)" for out-of-range values, so that corrupt values are visible in
// logs instead of printing as an empty string.
func (d DType) String() string {
	switch {
	case d.Valid():
		return d.Suffix()
	case d == Invalid:
		return "invalid"
	default:
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
}

// parseNames maps accepted spellings (lower case) to types. A slice rather
// than a map keeps Parse allocation-free with strings.EqualFold.
var parseNames = [...]struct {
	name string
	d    DType
}{
	{"f32", F32}, {"float32", F32},
	{"f16", F16}, {"float16", F16}, {"half", F16},
	{"bf16", BF16}, {"bfloat16", BF16},
	{"f64", F64}, {"float64", F64},
}

// Parse converts a type name to a DType. It accepts the kernel suffixes and
// the common long spellings ("float32", "float16", "half", "bfloat16",
// "float64"), case-insensitively and ignoring surrounding white space, because
// these names typically come from flags and configuration files.
func Parse(s string) (DType, error) {
	t := strings.TrimSpace(s)
	for _, p := range parseNames {
		if strings.EqualFold(t, p.name) {
			return p.d, nil
		}
	}
	return Invalid, fmt.Errorf("dtype: unknown type %q", s)
}

// Epsilon returns the machine epsilon of d: the distance from 1.0 to the next
// larger representable value (2^-23, 2^-10, 2^-7 and 2^-52), or 0 for invalid
// types.
func Epsilon(d DType) float64 { return d.get().epsilon }

// mustValid panics for invalid types. It is used by the value-processing
// functions, where silently returning a zero would corrupt data.
func mustValid(d DType) {
	if !d.Valid() {
		panic(fmt.Sprintf("dtype: invalid DType %d", uint8(d)))
	}
}
