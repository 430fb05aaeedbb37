package main

import (
	"slices"

	"github.com/baracuda-go/baracuda/dtype"
)

// The spec table: every kernel the library ships is one (family, op, dtype,
// variant) row below. The generator turns it into the extern "C"
// instantiations compiled by nvcc (gen/z<family>.cu), the Go support table
// (ops/zkernels.go) and README's support matrix; the constants CUDA and Go
// share (spec_consts.go) become gen/zconsts.cuh and ops/zconsts.go. Adding an op is one Op row
// plus its device functor in the family's .cuh and its reference in
// internal/ref.

// Param is one kernel parameter. Every kernel of a family takes the same
// parameters (one ABI per family), so one Go launcher serves all of them.
type Param struct {
	Name  string // C parameter name
	C     string // C type; "T" stands for the storage type of the dtype
	PTX   string // PTX parameter type: u64, u32, f32, f64, or b8 for a by-value struct
	Size  int    // bytes
	Align int    // bytes
}

// Op is one operation of a family.
type Op struct {
	Name    string        // op name in kernel names and in the Go API, e.g. "mul"
	Functor string        // C++ functor type passed to the family's template
	DTypes  []dtype.DType // nil: the family's DTypes
}

// Variant is one kernel shape of a family (for example, a reduction along
// the innermost axis or along an outer one). Each (op, dtype) is
// instantiated once per variant.
type Variant struct {
	Name     string // "" for a family with a single shape
	Template string // C++ function template called with <T, Functor>
	// MinMajor, when set, keeps the variant out of every build for an
	// older architecture: its kernels use instructions of compute
	// capability MinMajor (thread block clusters: 9).
	MinMajor int
	// Cluster, when set, is the thread block cluster size the kernels
	// declare (__cluster_dims__): a plain launch then runs the grid as
	// clusters of that many consecutive blocks.
	Cluster int
	// Ops and DTypes, when set, keep the variant to those ops and dtypes
	// (a kernel shape that only some rows have).
	Ops    []string
	DTypes []dtype.DType
	// Skip, when set, leaves single ops of a dtype out of what Ops and
	// DTypes keep: pairs where the bench has the kernels plans take
	// without the variant faster (docs/variants.md records the figures).
	Skip map[dtype.DType][]string
	// Block, when set, replaces the family's Block for the variant's
	// kernels (their launch bounds, with no minimum of resident blocks, and
	// the block the launcher gives them): a shape that needs more threads
	// to a block than the family's other kernels.
	Block int
	// MinBlocks, when set, replaces the family's (and the build's) minimum
	// of resident blocks per SM in the variant's launch bounds: a kernel
	// whose rare paths would otherwise take registers from the occupancy
	// its common path needs. OpMinBlocks replaces it for single ops.
	MinBlocks   int
	OpMinBlocks map[string]int
}

// has reports whether the variant is instantiated for op and dt.
func (v Variant) has(op string, dt dtype.DType) bool {
	return (v.Ops == nil || slices.Contains(v.Ops, op)) && (v.DTypes == nil || slices.Contains(v.DTypes, dt)) &&
		!slices.Contains(v.Skip[dt], op)
}

// Family is one PTX module: one .cuh body, one ABI, one Go launcher.
type Family struct {
	Name   string // module name: kernels/ptx/<Name>.ptx
	Prefix string // kernel name prefix, e.g. "binary_bw"
	Header string // the family's CUDA body, in gen/ (with the gen/ headers it includes)
	Block  int    // __launch_bounds__ threads per block
	// MinBlocks is __launch_bounds__' minimum resident blocks per SM, 0 for
	// none. 1 stops ptxas 11.8 from squeezing a large kernel's registers
	// down to an occupancy step at the price of spills.
	MinBlocks int
	Params    []Param
	DTypes    []dtype.DType
	Ops       []Op
	Variants  []Variant
}

// ptrParam is a device pointer parameter.
func ptrParam(name, ctype string) Param {
	return Param{Name: name, C: ctype, PTX: "u64", Size: 8, Align: 8}
}

// families is the table. Order is the order of the generated outputs.
var families = []*Family{&binaryFamily, &bcastFamily, &reduceFamily, &scanFamily, &lppoolFamily}

var allDTypes = []dtype.DType{dtype.F32, dtype.F16, dtype.BF16, dtype.F64}

// Build is one compilation of every family: the base build holds every
// kernel for compute_70; an extra build recompiles the kernels of some
// dtypes for a newer virtual architecture into a module of its own
// (kernels/ptx/<family><Suffix>.ptx), which the loader prefers on GPUs of
// at least MinMajor. Same source, same names, same ABI.
type Build struct {
	Suffix   string        // module name suffix, "" for the base build
	Arch     string        // nvcc's -arch
	MinMajor int           // lowest compute capability major that loads it
	DTypes   []dtype.DType // nil: every dtype
	// Families and Variants, when set, restrict the build to those
	// families (modules) and variants; nil: every family, and every
	// variant whose MinMajor the build reaches.
	Families []string
	Variants []string
	Verify   []string // real architectures ptxas must accept it for
	// MinBlocks replaces a family's MinBlocks in this build (family name
	// -> blocks), where a tighter register budget pays.
	MinBlocks map[string]int
	// VariantMinBlocks replaces a variant's MinBlocks in this build
	// ("family/variant" -> blocks); a variant's OpMinBlocks still wins.
	VariantMinBlocks map[string]int
	// SpillBytes is the most bytes of register spill stores that one
	// kernel of a family's module may have in this build (family name ->
	// bytes); ptx:verify fails anything above it, and every other module
	// on any spill. Set only where a measured MinBlocks is faster with
	// the spills than without them.
	SpillBytes map[string]int
}

// builds: compute_70 serves every dtype, converting bf16 through f32 in
// software; compute_80 has bf16 conversion instructions, which the bf16
// reductions, scans and binary ops measurably need (+5 to +13 points of copy bandwidth on an H100).
var builds = []Build{
	{Suffix: "", Arch: "compute_70", MinMajor: 7, Verify: []string{"sm_70", "sm_80", "sm_90"}},
	// The bf16 reductions and scans run at three blocks per SM (80
	// registers). The reductions spill nothing there for compute_80 (for
	// compute_70 the f64 prod kernels would, hence this build only). Some
	// bf16 scan kernels spill there (SpillBytes: the col mapping's cummax
	// and cummin, the row kernels of cummax and cummin) and are still faster
	// than at two blocks; docs/variants.md ("Module builds") gives the
	// figures.
	//
	// The reduce family's fix kernels (the flat path's mend, off the common
	// path) keep two blocks, where three would spill prod's; so do its
	// strip kernels, where three would spill max's, min's and prod's (a
	// strip block's shared memory seldom leaves room for three).
	//
	// The bf16 broadcasting tile kernels run at four blocks per SM (64
	// registers, at most 36 bytes of spill stores) where the base build's
	// three leave the SMs short of loads in flight (docs/variants.md,
	// "Module builds").
	//
	// The bf16 short scan kernels run at six blocks of 128 per SM (85
	// registers, no spills; 80 to 94 registers and five blocks without
	// the bound), more blocks staging their chunks at once.
	{Suffix: "_sm80", Arch: "compute_80", MinMajor: 8, DTypes: []dtype.DType{dtype.BF16}, Verify: []string{"sm_80", "sm_90"},
		MinBlocks:        map[string]int{"reduce": 3, "scan": 3},
		VariantMinBlocks: map[string]int{"bcast/tile": 4, "reduce/fix": 2, "reduce/strip": 2, "scan/short": 6},
		SpillBytes:       map[string]int{"scan": 224, "bcast": 40}},
	// compute_80 for the f16 kernels of the scan family's colstrip variant
	// (cp.async), which the base build cannot hold; every other f16 kernel
	// keeps the base build.
	{Suffix: "_sm80h", Arch: "compute_80", MinMajor: 8, DTypes: []dtype.DType{dtype.F16}, Families: []string{"scan"},
		Variants: []string{"colstrip"}, Verify: []string{"sm_80", "sm_90"}},
	// compute_90 for what only Hopper has: the reduce family's "cluster",
	// "stripc" and "segc" variants (thread block clusters, distributed shared
	// memory), every dtype. The other kernels keep their builds.
	{Suffix: "_sm90", Arch: "compute_90", MinMajor: 9, Families: []string{"reduce"}, Variants: []string{"cluster", "stripc", "segc"},
		Verify: []string{"sm_90"}},
}

// holds reports whether the build compiles kernel k.
func (b Build) holds(k kernel) bool {
	return b.has(k.DType) && b.hasFamily(k.Family) && (b.Variants == nil || slices.Contains(b.Variants, k.Variant.Name)) &&
		k.Variant.MinMajor <= b.MinMajor
}

// hasFamily reports whether the build makes a module of family f.
func (b Build) hasFamily(f *Family) bool {
	return b.Families == nil || slices.Contains(b.Families, f.Name)
}

// has reports whether the build compiles kernels of dtype dt.
func (b Build) has(dt dtype.DType) bool { return b.DTypes == nil || slices.Contains(b.DTypes, dt) }
