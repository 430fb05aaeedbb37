package ops

import "github.com/baracuda-go/baracuda/dtype"

// KernelInfo identifies the kernel a plan launches.
type KernelInfo struct {
	Name    string      // PTX entry name, e.g. "binary_bw_mul_bf16"
	Family  string      // PTX module, e.g. "binary"
	Op      string      // e.g. "mul"
	DType   dtype.DType // storage dtype of every tensor
	Backend string      // "cuda-ptx": PTX JIT-compiled by the CUDA driver
}

// Precision states the numerical guarantees of a plan.
type Precision struct {
	Math          string // type the arithmetic is done in: "f32" (f16, bf16, f32) or "f64"
	Accumulator   string // type sums and products accumulate in, "" when nothing accumulates
	Deterministic bool   // no atomics or order-dependent reductions
	BitStable     bool   // same bits run to run on the same GPU and driver
}

// backend is the only backend there is: PTX loaded through the driver.
const backend = "cuda-ptx"

func precisionFor(dt dtype.DType, accumulates bool) Precision {
	p := Precision{Math: dt.OpMath(), Deterministic: true, BitStable: true}
	if accumulates {
		p.Accumulator = dt.OpMath()
	}
	return p
}
