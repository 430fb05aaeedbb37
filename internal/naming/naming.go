// Package naming spells kernel entry names. The generator that writes the
// CUDA instantiations and the Go launchers that look kernels up in the PTX
// both call Kernel, so a name can only be spelled one way.
package naming

// Kernel returns the PTX entry name of one kernel: prefix_op_dtype, with
// _variant appended when variant is not empty, e.g. "binary_bw_mul_bf16".
func Kernel(prefix, op, dtypeSuffix, variant string) string {
	n := prefix + "_" + op + "_" + dtypeSuffix
	if variant != "" {
		n += "_" + variant
	}
	return n
}
