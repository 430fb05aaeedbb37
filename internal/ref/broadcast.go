package ref

import (
	"fmt"
	"math"
)

// BroadcastIndex maps each element of out (row-major) to the element of
// an operand of shape own that broadcasts to it by PyTorch's rules (dims
// aligned from the end; a dim of 1, or a missing leading dim, repeats).
// It panics when own does not broadcast to out.
func BroadcastIndex(own, out []int) []int {
	n := len(out)
	if len(own) > n {
		panic(fmt.Sprintf("ref: shape %v does not broadcast to %v", own, out))
	}
	// stride of own along each dim of out, 0 where it repeats.
	st := make([]int, n)
	s := 1
	for d := n - 1; d >= 0; d-- {
		od := d - (n - len(own))
		if od < 0 {
			continue
		}
		switch own[od] {
		case out[d]:
			st[d] = s
		case 1:
		default:
			panic(fmt.Sprintf("ref: shape %v does not broadcast to %v", own, out))
		}
		s *= own[od]
	}
	total := 1
	for _, d := range out {
		total *= d
	}
	idx := make([]int, total)
	for i := range idx {
		rem, off := i, 0
		for d := n - 1; d >= 0; d-- {
			off += (rem % out[d]) * st[d]
			rem /= out[d]
		}
		idx[i] = off
	}
	return idx
}

// BinaryBroadcastBackward is the broadcasting backward in float64: dy has
// shape, a and b (row-major) their own shapes, which broadcast to it; da
// and db, in a's and b's shapes, are the elementwise gradients of
// BinaryBackward summed over the broadcast dims, in dy's row-major order.
// Each sum starts at -0, the identity of addition, so a gradient of one
// term is that term exactly (a -0 included), as the kernels give it; an
// empty dy gives +0 sums.
func BinaryBroadcastBackward(op string, shape, aShape, bShape []int, dy, a, b []float64, s float64) (da, db []float64) {
	ia, ib := BroadcastIndex(aShape, shape), BroadcastIndex(bShape, shape)
	da, db = make([]float64, numel(aShape)), make([]float64, numel(bShape))
	if len(dy) > 0 {
		for _, v := range [2][]float64{da, db} {
			for i := range v {
				v[i] = math.Copysign(0, -1)
			}
		}
	}
	for i, g := range dy {
		ga, gb := BinaryBackward(op, g, a[ia[i]], b[ib[i]], s)
		da[ia[i]] += ga
		db[ib[i]] += gb
	}
	return da, db
}

// BroadcastAbsSum is, for each element of an operand of shape own that
// broadcasts to out, the sum of |v| over the elements of vals (of shape
// out) that map to it: the scale of a sum's rounding error.
func BroadcastAbsSum(vals []float64, own, out []int) []float64 {
	idx := BroadcastIndex(own, out)
	sum := make([]float64, numel(own))
	for i, v := range vals {
		sum[idx[i]] += math.Abs(v)
	}
	return sum
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func init() {
	checks = append(checks, Check{Name: "binary broadcast sums", Run: checkBroadcast})
}

// checkBroadcast compares BinaryBroadcastBackward with the elementwise
// backward of explicitly expanded operands summed by hand, for [2, 3] *
// [3] and [2, 1] * [] patterns.
func checkBroadcast() error {
	shape := []int{2, 3}
	dy := []float64{1, 2, 3, 4, 5, 6}
	a := []float64{1, -1, 2, 0.5, 3, -2}
	b := []float64{2, 3, 4}
	da, db := BinaryBroadcastBackward("mul", shape, shape, []int{3}, dy, a, b, 0)
	for i := range dy {
		if want := dy[i] * b[i%3]; da[i] != want {
			return fmt.Errorf("mul [2 3]x[3]: da[%d] = %v, want %v", i, da[i], want)
		}
	}
	for c := 0; c < 3; c++ {
		if want := dy[c]*a[c] + dy[3+c]*a[3+c]; db[c] != want {
			return fmt.Errorf("mul [2 3]x[3]: db[%d] = %v, want %v", c, db[c], want)
		}
	}
	da, db = BinaryBroadcastBackward("add", shape, []int{2, 1}, []int{}, dy, []float64{0, 0}, []float64{0}, 2)
	if da[0] != 6 || da[1] != 15 || len(db) != 1 || db[0] != 42 {
		return fmt.Errorf("add [2 1]+[] alpha 2: da %v db %v, want [6 15] [42]", da, db)
	}
	return nil
}
