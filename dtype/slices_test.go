package dtype

import (
	"math"
	"testing"
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
	if n := F16ToFloat32s(f, bits); n != len(bits) {
		t.Fatalf("F16ToFloat32s converted %d", n)
	}
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
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range src {
			want := F16FromFloat32(v)
			if d == BF16 {
				want = BF16FromFloat32(v)
			}
			if got[i] != want {
				t.Errorf("To16(%s)[%d] = %#x, want %#x", d, i, got[i], want)
			}
		}
		back, err := From16(d, got)
		if err != nil {
			t.Fatal(err)
		}
		if len(back) != len(src) {
			t.Fatalf("From16(%s) gave %d values", d, len(back))
		}
	}
	short := make([]uint16, 3)
	if n := F16FromFloat32s(short, src); n != 3 {
		t.Errorf("F16FromFloat32s into 3 converted %d", n)
	}
	if _, err := To16(F32, src); err == nil {
		t.Error("To16(f32) gave no error")
	}
	if _, err := From16(F64, bits); err == nil {
		t.Error("From16(f64) gave no error")
	}
}
