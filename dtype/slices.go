package dtype

import "fmt"

// The slice forms of the conversions, for host data on its way to or from
// the device: f16 and bf16 tensors are uploaded and read back as []uint16
// (driver.CopyToDevice, driver.CopyFromDevice). Each converts
// min(len(dst), len(src)) elements, allocates nothing and returns how many
// it converted.

// F16FromFloat32s sets dst[i] = F16FromFloat32(src[i]).
func F16FromFloat32s(dst []uint16, src []float32) int {
	n := min(len(dst), len(src))
	for i := range n {
		dst[i] = F16FromFloat32(src[i])
	}
	return n
}

// F16ToFloat32s sets dst[i] = F16ToFloat32(src[i]).
func F16ToFloat32s(dst []float32, src []uint16) int {
	n := min(len(dst), len(src))
	for i := range n {
		dst[i] = F16ToFloat32(src[i])
	}
	return n
}

// BF16FromFloat32s sets dst[i] = BF16FromFloat32(src[i]).
func BF16FromFloat32s(dst []uint16, src []float32) int {
	n := min(len(dst), len(src))
	for i := range n {
		dst[i] = BF16FromFloat32(src[i])
	}
	return n
}

// BF16ToFloat32s sets dst[i] = BF16ToFloat32(src[i]).
func BF16ToFloat32s(dst []float32, src []uint16) int {
	n := min(len(dst), len(src))
	for i := range n {
		dst[i] = BF16ToFloat32(src[i])
	}
	return n
}

// To16 converts src to the 16-bit storage of d (F16 or BF16), rounding to
// nearest even, into a new slice.
func To16(d DType, src []float32) ([]uint16, error) {
	out := make([]uint16, len(src))
	switch d {
	case F16:
		F16FromFloat32s(out, src)
	case BF16:
		BF16FromFloat32s(out, src)
	default:
		return nil, fmt.Errorf("dtype: To16: %s is not a 16-bit type", d)
	}
	return out, nil
}

// From16 converts the 16-bit storage of d (F16 or BF16) to float32 (exact),
// into a new slice.
func From16(d DType, src []uint16) ([]float32, error) {
	out := make([]float32, len(src))
	switch d {
	case F16:
		F16ToFloat32s(out, src)
	case BF16:
		BF16ToFloat32s(out, src)
	default:
		return nil, fmt.Errorf("dtype: From16: %s is not a 16-bit type", d)
	}
	return out, nil
}
