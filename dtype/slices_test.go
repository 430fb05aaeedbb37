package dtype

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSliceConversions: the slice forms agree with the scalar ones on
// every 16-bit pattern and a spread of float32 values, stop at the shorter
// slice, and To16/From16 refuse the other types.
func TestSliceConversions(t *testing.T) {
	bits := make([]uint16, 1<<16)
	for i := range bits {
		bits[i] = uint16(i)
	}
	f := make([]float32, len(bits))
	require.Equal(t, len(bits), F16ToFloat32s(f, bits), "F16ToFloat32s converted count")
	for i, b := range bits {
		if w := F16ToFloat32(b); math.Float32bits(f[i]) != math.Float32bits(w) {
			t.Fatalf("F16ToFloat32s[%#x] = %v, want %v", b, f[i], w)
		}
	}
	BF16ToFloat32s(f, bits)
	for i, b := range bits {
		if w := BF16ToFloat32(b); math.Float32bits(f[i]) != math.Float32bits(w) {
			t.Fatalf("BF16ToFloat32s[%#x] = %v, want %v", b, f[i], w)
		}
	}
	src := []float32{0, -0, 1, -1.5, 65504, 65520, 1e-8, 3.14159, float32(math.Inf(-1)), float32(math.NaN()), 1e38}
	for _, d := range []DType{F16, BF16} {
		got, err := To16(d, src)
		require.NoError(t, err)
		want := make([]uint16, len(src))
		for i, v := range src {
			want[i] = F16FromFloat32(v)
			if d == BF16 {
				want[i] = BF16FromFloat32(v)
			}
		}
		assert.Equal(t, want, got, "To16(%s)", d)
		back, err := From16(d, got)
		require.NoError(t, err)
		assert.Len(t, back, len(src), "From16(%s)", d)
	}
	assert.Equal(t, 3, F16FromFloat32s(make([]uint16, 3), src), "F16FromFloat32s into 3")
	_, err := To16(F32, src)
	assert.Error(t, err, "To16(f32)")
	_, err = From16(F64, bits)
	assert.Error(t, err, "From16(f64)")
}
