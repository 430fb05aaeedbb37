package ops

import "github.com/baracuda-go/baracuda/dtype"

// DType is a tensor's element type. It is dtype.DType, re-exported
// so that code outside this module can name it.
type DType = dtype.DType

// The element types every op supports.
const (
	F32  = dtype.F32  // IEEE binary32
	F16  = dtype.F16  // IEEE binary16
	BF16 = dtype.BF16 // bfloat16
	F64  = dtype.F64  // IEEE binary64
)

// ParseDType accepts "f32", "f16", "bf16", "f64" and the long names
// ("float32", "float16", "half", "bfloat16", "float64").
func ParseDType(s string) (DType, error) { return dtype.Parse(s) }
