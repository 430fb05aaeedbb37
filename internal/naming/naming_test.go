package naming

import "testing"

func TestKernel(t *testing.T) {
	cases := []struct{ prefix, op, dt, variant, want string }{
		{"binary_bw", "mul", "bf16", "", "binary_bw_mul_bf16"},
		{"reduce_bw", "var", "f32", "inner", "reduce_bw_var_f32_inner"},
	}
	for _, c := range cases {
		if got := Kernel(c.prefix, c.op, c.dt, c.variant); got != c.want {
			t.Errorf("Kernel(%q, %q, %q, %q) = %q, want %q", c.prefix, c.op, c.dt, c.variant, got, c.want)
		}
	}
}
