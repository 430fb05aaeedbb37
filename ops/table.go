package ops

import (
	"slices"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/naming"
)

// kernelRow is one row of the generated support table (zkernels.go).
type kernelRow struct {
	family   string
	op       string
	dtype    dtype.DType
	variant  string
	name     string
	minMajor int // the variant's lowest compute capability major (0: any)
	block    int // threads per block, where the variant sets them (0: the family's)
}

// abiParam is one kernel parameter as the PTX declares it.
type abiParam struct {
	name  string
	ptx   string // u64, u32, f32, f64, b8
	size  int
	align int
}

// familyRow describes one PTX module and the parameters all its kernels take.
type familyRow struct {
	name   string
	prefix string
	block  int
	params []abiParam
}

// buildRow is one module build (see builds in gen/spec.go).
type buildRow struct {
	suffix   string
	arch     string
	minMajor int
	dtypes   []dtype.DType // empty: every dtype
	families []string      // nil: every family
	variants []string      // nil: every variant whose minMajor the build reaches
}

// holds reports whether the build compiles kernel k.
func (b *buildRow) holds(k *kernelRow) bool {
	return b.has(k.dtype) && listHas(b.families, k.family) && listHas(b.variants, k.variant) && k.minMajor <= b.minMajor
}

// hasFamily reports whether the build makes a module of the family.
func (b *buildRow) hasFamily(family string) bool { return listHas(b.families, family) }

// listHas: a nil list holds everything.
func listHas(list []string, s string) bool { return list == nil || slices.Contains(list, s) }

func (b *buildRow) has(dt dtype.DType) bool {
	return len(b.dtypes) == 0 || slices.Contains(b.dtypes, dt)
}

// moduleFor is the module kernel k loads from on a device of compute
// capability major: the last build that holds it and that the device
// reaches ("" when none does), or only the base build when baseOnly is set.
func moduleFor(k *kernelRow, major int, baseOnly bool) string {
	mod := ""
	for i := range buildTable {
		b := &buildTable[i]
		if major >= b.minMajor && b.holds(k) {
			mod = k.family + b.suffix
		}
		if baseOnly {
			break
		}
	}
	return mod
}

// kernelByName is the table row of the kernel named name, or nil.
func kernelByName(name string) *kernelRow {
	for i := range kernelTable {
		if kernelTable[i].name == name {
			return &kernelTable[i]
		}
	}
	return nil
}

// threads is the block kernel k launches with: its variant's where the
// variant sets one, else its family f's.
func (k *kernelRow) threads(f *familyRow) int {
	if k.block > 0 {
		return k.block
	}
	return f.block
}

func familyByName(name string) *familyRow {
	for i := range familyTable {
		if familyTable[i].name == name {
			return &familyTable[i]
		}
	}
	return nil
}

// lookupKernel returns the entry name of (family, op, dtype, variant), or
// false when the spec has no such kernel.
func lookupKernel(family, op string, dt dtype.DType, variant string) (string, bool) {
	f := familyByName(family)
	if f == nil {
		return "", false
	}
	name := naming.Kernel(f.prefix, op, dt.Suffix(), variant)
	for i := range kernelTable {
		if kernelTable[i].name == name {
			return name, true
		}
	}
	return "", false
}

// Kernels lists every kernel the library ships, grouped by family, op and
// dtype in a fixed order: for diagnostics, for reports of what a program
// carries, and as the order WarmOptions.Shard counts in. Some need a newer
// GPU than others; WarmAll loads those a device can run.
func Kernels() []KernelInfo {
	out := make([]KernelInfo, len(kernelTable))
	for i, k := range kernelTable {
		out[i] = KernelInfo{Name: k.name, Family: k.family, Op: k.op, DType: k.dtype, Backend: backend}
	}
	return out
}
