package dtype

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Round returns the value v takes after being stored in a d element.
//
// For F16 and BF16 the value is first converted to float32 (Go's conversion,
// round-to-nearest-even) and then to the 16-bit format. That double rounding
// is deliberate: GPU kernels compute in float32 opmath and round the float32
// result to the storage type, so the float64 reference must round the same
// way to be comparable bit for bit. Round panics if d is not valid.
func Round(d DType, v float64) float64 {
	switch d {
	case F32:
		return float64(float32(v))
	case F16:
		return float64(F16ToFloat32(F16FromFloat32(float32(v))))
	case BF16:
		return float64(BF16ToFloat32(BF16FromFloat32(float32(v))))
	case F64:
		return v
	}
	mustValid(d)
	return v // unreachable
}

// Bits returns the storage bit pattern of v rounded to d (see Round),
// zero-extended to 64 bits. Bits panics if d is not valid.
func Bits(d DType, v float64) uint64 {
	switch d {
	case F32:
		return uint64(math.Float32bits(float32(v)))
	case F16:
		return uint64(F16FromFloat32(float32(v)))
	case BF16:
		return uint64(BF16FromFloat32(float32(v)))
	case F64:
		return math.Float64bits(v)
	}
	mustValid(d)
	return 0 // unreachable
}

// fromBits is the inverse of Bits for valid storage patterns.
func fromBits(d DType, b uint64) float64 {
	switch d {
	case F32:
		return float64(math.Float32frombits(uint32(b)))
	case F16:
		return float64(F16ToFloat32(uint16(b)))
	case BF16:
		return float64(BF16ToFloat32(uint16(b)))
	default:
		return math.Float64frombits(b)
	}
}

// Encode rounds each value to d and returns the little-endian storage bytes,
// len(vals)*d.Size() bytes in all, ready to copy into a device buffer (all
// supported GPUs are little-endian). Encode panics if d is not valid.
func Encode(d DType, vals []float64) []byte {
	mustValid(d)
	n := d.Size()
	out := make([]byte, len(vals)*n)
	for i, v := range vals {
		b := out[i*n : i*n+n]
		bits := Bits(d, v)
		switch n {
		case 2:
			binary.LittleEndian.PutUint16(b, uint16(bits))
		case 4:
			binary.LittleEndian.PutUint32(b, uint32(bits))
		default:
			binary.LittleEndian.PutUint64(b, bits)
		}
	}
	return out
}

// Decode interprets b as little-endian d elements and returns their values.
// It panics if d is not valid or len(b) is not a multiple of d.Size(), since
// either means the caller has mismatched a buffer and its type.
func Decode(d DType, b []byte) []float64 {
	mustValid(d)
	n := d.Size()
	if len(b)%n != 0 {
		panic(fmt.Sprintf("dtype: Decode: %d bytes is not a whole number of %s elements", len(b), d))
	}
	out := make([]float64, len(b)/n)
	for i := range out {
		e := b[i*n : i*n+n]
		var bits uint64
		switch n {
		case 2:
			bits = uint64(binary.LittleEndian.Uint16(e))
		case 4:
			bits = uint64(binary.LittleEndian.Uint32(e))
		default:
			bits = binary.LittleEndian.Uint64(e)
		}
		out[i] = fromBits(d, bits)
	}
	return out
}

// ULPDistance returns how many representable d values lie between a and b
// after both are rounded to d: the difference of their positions in the
// format's ordered encoding, where +0 and -0 share position 0, the smallest
// subnormals of either sign are at ±1 and the infinities sit just past the
// largest finite values. It returns 0 when both are NaN and +Inf when exactly
// one is. The result is a float64 because the F64 distance between values of
// opposite sign can exceed the int64 range (it is then rounded, which is
// irrelevant for tolerance checks). ULPDistance panics if d is not valid.
func ULPDistance(d DType, a, b float64) float64 {
	// Round before the NaN check: a float64 cannot become NaN by rounding,
	// but checking the rounded values keeps the rule "NaN in storage" exact.
	ra, rb := Round(d, a), Round(d, b)
	na, nb := math.IsNaN(ra), math.IsNaN(rb)
	if na || nb {
		if na && nb {
			return 0
		}
		return math.Inf(1)
	}
	// Sign-magnitude encodings are ordered by magnitude within each sign,
	// so the distance is |ma-mb| for equal signs and ma+mb across zero
	// (which makes ±0 coincide). Magnitudes are below 2^63, so the sum
	// cannot overflow a uint64.
	signBit := uint64(1) << (8*d.Size() - 1)
	ba, bb := Bits(d, ra), Bits(d, rb)
	ma, mb := ba&^signBit, bb&^signBit
	if (ba^bb)&signBit != 0 {
		return float64(ma + mb)
	}
	if ma < mb {
		ma, mb = mb, ma
	}
	return float64(ma - mb)
}
