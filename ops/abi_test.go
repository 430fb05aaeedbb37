package ops

import (
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// abiPackers holds, per family, a call of the family's real packing code
// (the one Run uses) with zero values. Each family's test file registers it.
var abiPackers = map[string]func(*driver.Args){}

func init() {
	abiPackers["binary"] = func(a *driver.Args) {
		(&BinaryBackward{}).pack(a, &[5]*Tensor{}, &binaryLayout{})
	}
}

// TestKernelTableMatchesPTX: see VerifyEmbeddedPTX.
func TestKernelTableMatchesPTX(t *testing.T) {
	for _, err := range VerifyEmbeddedPTX() {
		t.Error(err)
	}
}

// TestVerifyEmbeddedPTXDetectsDrift feeds the parser a module whose entry
// has a wrong parameter, so the check above is known to be able to fail.
func TestVerifyEmbeddedPTXDetectsDrift(t *testing.T) {
	src := ".visible .entry binary_bw_add_f32(\n\t.param .u64 p0,\n\t.param .align 8 .b8 p1[396]\n)"
	es, err := parseEntries(src)
	if err != nil {
		t.Fatal(err)
	}
	ps := es["binary_bw_add_f32"]
	if len(ps) != 2 || ps[0] != (ptxParam{"u64", 8, 8}) || ps[1] != (ptxParam{"b8", 396, 8}) {
		t.Fatalf("parsed %+v", ps)
	}
	if _, err := parseEntries(".visible .entry k(\n\t.reg .u64 x\n)"); err == nil {
		t.Error("a malformed parameter list parsed without error")
	}
}

// TestLaunchersPackABI runs each family's packing code and compares what it
// packs with the family's PTX parameter list.
func TestLaunchersPackABI(t *testing.T) {
	for _, f := range familyTable {
		t.Run(f.name, func(t *testing.T) {
			pack, ok := abiPackers[f.name]
			if !ok {
				t.Fatalf("family %s has no registered packer", f.name)
			}
			a := driver.GetArgs()
			defer driver.PutArgs(a)
			pack(a)
			kinds := a.Kinds()
			if len(kinds) != len(f.params) {
				t.Fatalf("launcher packs %d parameters, ABI has %d", len(kinds), len(f.params))
			}
			for i, p := range f.params {
				k := kinds[i]
				if k.PTXType != p.ptx || k.Size != p.size || k.Align != p.align {
					t.Errorf("parameter %d (%s): launcher packs .%s size %d align %d, ABI .%s size %d align %d",
						i, p.name, k.PTXType, k.Size, k.Align, p.ptx, p.size, p.align)
				}
			}
		})
	}
}

// TestModuleFor: bf16 kernels load from the compute_80 build on compute
// capability 8.0 and newer, everything else (and everything under
// BARACUDA_BASE_PTX) from the base build; the reduce cluster kernels only
// from the compute_90 build, and from no module below 9.0 or under
// BARACUDA_BASE_PTX.
func TestModuleFor(t *testing.T) {
	cases := []struct {
		variant string
		dt      dtype.DType
		major   int
		base    bool
		want    string
	}{
		{"col", dtype.BF16, 9, false, "reduce_sm80"},
		{"col", dtype.BF16, 8, false, "reduce_sm80"},
		{"col", dtype.BF16, 7, false, "reduce"},
		{"col", dtype.BF16, 9, true, "reduce"},
		{"stats", dtype.F32, 9, false, "reduce"},
		{"row", dtype.F16, 8, false, "reduce"},
		{"apply", dtype.F64, 9, false, "reduce"},
		{"cluster", dtype.BF16, 9, false, "reduce_sm90"},
		{"cluster", dtype.F32, 10, false, "reduce_sm90"},
		{"cluster", dtype.F64, 9, false, "reduce_sm90"},
		{"cluster", dtype.F32, 8, false, ""},
		{"cluster", dtype.BF16, 9, true, ""},
		{"stripc", dtype.BF16, 9, false, "reduce_sm90"},
		{"stripc", dtype.F64, 9, false, "reduce_sm90"},
		{"stripc", dtype.F32, 8, false, ""},
		{"strip", dtype.F32, 9, false, "reduce"},
	}
	for _, c := range cases {
		name, ok := lookupKernel("reduce", "var", c.dt, c.variant)
		if !ok {
			t.Fatalf("no reduce var %s %s kernel", c.dt, c.variant)
		}
		if got := moduleFor(kernelByName(name), c.major, c.base); got != c.want {
			t.Errorf("moduleFor(%s, major %d, base %v) = %q, want %q", name, c.major, c.base, got, c.want)
		}
	}
}
