// Package ref is the float64 reference of every op, forward and backward.
// It is the oracle of the GPU tests and the CPU path of `baracuda selftest`.
// Each backward implements exactly the formula and edge-case rules of the
// kernel (docs/semantics.md), and is itself checked against central finite
// differences of the forward.
package ref
