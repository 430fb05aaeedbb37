package dtype

import (
	"math"
)

// Bit layout constants of binary32, shared by both half-precision converters.
const (
	f32SignMask = 0x80000000
	f32AbsMask  = 0x7fffffff
	f32ExpMask  = 0x7f800000 // also the bit pattern of +Inf
	f32MantBits = 23
)

// Thresholds on |x|'s binary32 bit pattern for the binary16 conversion.
const (
	// f16Overflow is 65520 = 65504 + half an ulp: at and above it, round to
	// nearest even gives infinity (65504's last significand bit is 1, so the
	// tie goes up).
	f16Overflow = 0x477ff000
	// f16MinNormal is 2^-14, the smallest normal binary16 value.
	f16MinNormal = 0x38800000
	// f16HalfMinSub is 2^-25, half the smallest binary16 subnormal. It ties
	// to even, i.e. to zero; anything strictly larger rounds to at least
	// the smallest subnormal.
	f16HalfMinSub = 0x33000000
	// f16Rebias moves the exponent from bias 127 to bias 15 in place.
	f16Rebias = (127 - 15) << f32MantBits
)

// F16FromFloat32 converts f to IEEE binary16 bits with round-to-nearest-even.
//
// Values at or beyond ±65520 become ±Inf; values that fall in the binary16
// subnormal range are rounded to the nearest subnormal (so 2^-25 becomes zero
// and anything above it the smallest subnormal); the sign of zero is kept.
// NaNs stay NaN: the sign and the top 10 payload bits are kept and the quiet
// bit is set, which both matches hardware (F16C, CUDA) quieting of signaling
// NaNs and guarantees a payload that only had low bits cannot turn into Inf.
func F16FromFloat32(f float32) uint16 {
	x := math.Float32bits(f)
	sign := uint16(x>>16) & 0x8000
	a := x & f32AbsMask
	switch {
	case a > f32ExpMask: // NaN
		return sign | 0x7e00 | uint16(a>>13)&0x3ff
	case a >= f16Overflow: // overflow or Inf
		return sign | 0x7c00
	case a >= f16MinNormal:
		// Rebias the exponent, then round the 23-bit significand to 10
		// bits: adding 0xfff plus the lowest kept bit carries into the kept
		// part exactly when the discarded bits exceed one half, or equal it
		// with an odd kept part. A carry out of the significand correctly
		// bumps the exponent; it cannot reach the Inf encoding because
		// a < f16Overflow.
		a -= f16Rebias
		a += 0xfff + (a>>13)&1
		return sign | uint16(a>>13)
	case a > f16HalfMinSub:
		// Result is a binary16 subnormal (or rounds up to the smallest
		// normal). Express the value as an integer multiple of the
		// subnormal step 2^-24: with the implicit bit restored, the value is
		// m * 2^(e-150), so the multiple is m >> (126-e). The shift is
		// between 14 and 24 here, and the same add-then-shift rounding as
		// above applies. A result of 0x400 is the smallest normal, which is
		// exactly the right encoding.
		e := a >> f32MantBits
		m := a&0x7fffff | 0x800000
		shift := 126 - e
		m += (1<<(shift-1) - 1) + (m>>shift)&1
		return sign | uint16(m>>shift)
	default: // |f| <= 2^-25, including float32 subnormals and zero
		return sign
	}
}

// F16ToFloat32 converts IEEE binary16 bits to float32. Every binary16 value
// is exactly representable in binary32, so this is exact; NaN payloads are
// kept bit for bit (signaling NaNs are not quieted here).
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0x1f: // Inf or NaN
		return math.Float32frombits(sign | f32ExpMask | mant<<13)
	case 0: // zero or subnormal: mant * 2^-24, exact in float32
		// Building 2^-14 * (1 + mant/1024) and subtracting 2^-14 leaves
		// mant * 2^-24 without any rounding, and avoids a normalisation loop.
		v := math.Float32frombits(f16MinNormal|mant<<13) - 0x1p-14
		return math.Float32frombits(math.Float32bits(v) | sign)
	default:
		return math.Float32frombits(sign | (exp<<f32MantBits + f16Rebias) | mant<<13)
	}
}

// BF16FromFloat32 converts f to bfloat16 bits with round-to-nearest-even.
//
// bfloat16 shares binary32's exponent range, so rounding is just rounding
// away the low 16 bits: subnormals round within the subnormal range, and the
// carry from the largest finite values lands exactly on the Inf encoding (RNE
// overflow). NaNs keep their sign and top 7 payload bits and are quieted so
// that they cannot truncate to Inf.
func BF16FromFloat32(f float32) uint16 {
	x := math.Float32bits(f)
	if x&f32AbsMask > f32ExpMask {
		return uint16(x>>16) | 0x40
	}
	x += 0x7fff + (x>>16)&1
	return uint16(x >> 16)
}

// BF16ToFloat32 converts bfloat16 bits to float32. This is exact: bfloat16 is
// the upper half of a binary32.
func BF16ToFloat32(b uint16) float32 {
	return math.Float32frombits(uint32(b) << 16)
}
