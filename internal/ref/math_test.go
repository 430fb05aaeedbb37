package ref

import (
	"math"
	"testing"
)

// TestLogPowSubnormal: Log and Pow of subnormal bases, against values
// derived by hand from x = k*2^-1074 (log x = log k - 1074 ln 2, and
// x^y = k^y * 2^(-1074y), all of normal operands). math.Pow is within
// about |y log x| ulps (it exponentiates y times a rounded logarithm), so
// powers are compared to 1e-12; math.Log of a subnormal is off by up to 5%.
func TestLogPowSubnormal(t *testing.T) {
	close := func(got, want float64) bool { return math.Abs(got-want) <= 1e-12*math.Abs(want) }
	for _, k := range []float64{1, 5, 1 << 20, 1<<52 - 1} {
		x := k * 0x1p-1074
		want := math.Log(k) - 1074*math.Ln2
		if got := Log(x); !close(got, want) {
			t.Errorf("Log(%v*2^-1074) = %v, want %v", k, got, want)
		}
		for _, y := range []float64{-0.7, -0.3, 0.25, 0.9, 1.5} {
			// k^y * 2^(-1074y), the power of two split so that each
			// factor stays normal.
			want := math.Pow(k, y) * math.Pow(2, -537*y) * math.Pow(2, -537*y)
			if got := Pow(x, y); !close(got, want) {
				t.Errorf("Pow(%v*2^-1074, %v) = %v, want %v", k, y, got, want)
			}
		}
	}
	if got := Pow(-5*0x1p-1074, 0.25); !math.IsNaN(got) {
		t.Errorf("Pow of a negative subnormal to 0.25 = %v, want NaN", got)
	}
	if got, want := Pow(-5*0x1p-1074, 2), 0.0; got != want {
		t.Errorf("Pow(-5*2^-1074, 2) = %v, want %v (underflow)", got, want)
	}
	// pow's db = g * a^b * log a at a = 5*2^-1074, b = 1 and b = 1/2.
	a := 5 * 0x1p-1074
	ln := math.Log(5) - 1074*math.Ln2
	if _, db := BinaryBackward("pow", -1, a, 0.5, 0); !close(db, -math.Sqrt(5)*0x1p-537*ln) {
		t.Errorf("pow db at a = 5*2^-1074, b = 1/2: %v, want %v", db, -math.Sqrt(5)*0x1p-537*ln)
	}
	if _, db := BinaryBackward("pow", 1, a, 1, 0); db != a*ln {
		t.Errorf("pow db at a = 5*2^-1074, b = 1: %v, want %v", db, a*ln)
	}
}
