package ref

import "testing"

// TestChecks runs every self-check of the reference (finite differences
// and pinned PyTorch values of every family).
func TestChecks(t *testing.T) {
	if len(Checks()) == 0 {
		t.Fatal("no reference checks registered")
	}
	for _, c := range Checks() {
		t.Run(c.Name, func(t *testing.T) {
			if err := c.Run(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestBinaryCheckCanFail breaks a formula on purpose: the finite-difference
// check must notice.
func TestBinaryCheckCanFail(t *testing.T) {
	fd := centralDiff(func(x float64) float64 { return BinaryForward("mul", x, 3, 0) }, 2)
	da, _ := BinaryBackward("mul", 1, 2, 3, 0)
	if !closeRel(da, fd, 1e-6) || closeRel(da+1e-3, fd, 1e-6) {
		t.Fatalf("finite difference %v vs backward %v: the comparison cannot tell a wrong gradient", fd, da)
	}
}
