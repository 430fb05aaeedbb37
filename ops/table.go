package ops

import (
	"github.com/baracuda-go/baracuda/internal/dtype"
	"github.com/baracuda-go/baracuda/internal/naming"
)

// kernelRow is one row of the generated support table (zkernels.go).
type kernelRow struct {
	family  string
	op      string
	dtype   dtype.DType
	variant string
	name    string
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
	dtypes   []dtype.DType // empty: every kernel
}

func (b *buildRow) has(dt dtype.DType) bool {
	if len(b.dtypes) == 0 {
		return true
	}
	for _, d := range b.dtypes {
		if d == dt {
			return true
		}
	}
	return false
}

// moduleFor is the module a kernel of family and dtype dt loads from on a
// device of compute capability major: the last build that holds dt and
// that the device reaches, or the base build when baseOnly is set.
func moduleFor(family string, dt dtype.DType, major int, baseOnly bool) string {
	mod := family
	if baseOnly {
		return mod
	}
	for i := range buildTable {
		b := &buildTable[i]
		if major >= b.minMajor && b.has(dt) {
			mod = family + b.suffix
		}
	}
	return mod
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

// Kernels lists every kernel the library ships, in spec order.
func Kernels() []KernelInfo {
	out := make([]KernelInfo, len(kernelTable))
	for i, k := range kernelTable {
		out[i] = KernelInfo{Name: k.name, Family: k.family, Op: k.op, DType: k.dtype, Backend: backend}
	}
	return out
}
