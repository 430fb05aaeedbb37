package ops

import (
	"fmt"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
)

// TestReduceInnerUnit checks innerUnit (RedInner in gen/reduce_inner.cuh)
// against the values worked out by hand, and that every unit holds whole
// slices in whole packs.
func TestReduceInnerUnit(t *testing.T) {
	for _, c := range []struct {
		k       int64
		size    int
		u, q, b int64
	}{
		{4, 4, 1, 1, 4}, {4, 2, 1, 2, 4}, {1, 2, 1, 8, 1}, {1, 4, 1, 4, 2}, {2, 2, 1, 4, 2}, {2, 4, 1, 2, 4},
		{8, 2, 1, 1, 4}, {8, 4, 2, 1, 2}, {16, 2, 2, 1, 2}, {16, 4, 4, 1, 1}, {3, 2, 3, 8, 1}, {3, 4, 3, 4, 1},
		{6, 2, 3, 4, 1}, {6, 4, 3, 2, 1}, {12, 2, 3, 2, 1}, {12, 4, 3, 1, 1}, {5, 4, 5, 4, 1}, {7, 4, 7, 4, 1},
		{10, 4, 5, 2, 1}, {14, 4, 7, 2, 1},
	} {
		u, q, b := innerUnit(c.k, c.size)
		if u != c.u || q != c.q || b != c.b {
			t.Errorf("k %d size %d: u %d q %d b %d, want %d %d %d", c.k, c.size, u, q, b, c.u, c.q, c.b)
		}
	}
	for _, size := range []int{2, 4} {
		for k := int64(1); k <= redShortMaxK; k++ {
			if !innerPacked(k, size) {
				continue
			}
			u, q, b := innerUnit(k, size)
			if u*int64(16/size) != q*k || b*u > redInnerPacks && b > 1 || b*q > redInnerVals && b > 1 {
				t.Errorf("k %d size %d: u %d q %d b %d", k, size, u, q, b)
			}
		}
	}
	want := map[int][]int64{4: {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16}, 2: {1, 2, 3, 4, 6, 8, 12, 16}, 8: nil}
	for size, ks := range want {
		var got []int64
		for k := int64(0); k <= redShortMaxK+1; k++ {
			if innerPacked(k, size) {
				got = append(got, k)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(ks) {
			t.Errorf("size %d: innerPacked takes k %v, want %v", size, got, ks)
		}
	}
}

// TestReduceInnerModel walks red_inner_k's index math (every block,
// thread and step, the loads clamped to the last unit, the last block's
// leftover slices) for the grid innerGrid gives and for smaller grids
// (several steps a thread), and checks that each element of x and dx is
// covered exactly once, by the thread that also reads its slice's dy and
// y, at the slice the shape gives it.
func TestReduceInnerModel(t *testing.T) {
	for _, size := range []int{2, 4} {
		n := int64(16 / size)
		for k := int64(1); k <= redShortMaxK; k++ {
			if !innerPacked(k, size) {
				continue
			}
			for _, slices := range []int64{1, 7, 8, 9, 1001, 4099, 65537} {
				u, q, b := innerUnit(k, size)
				units := slices / q
				for _, grid := range []int64{innerGrid(slices, k, size), 1, 3} {
					seen := make([]int8, slices*k)
					for blk := int64(0); blk < grid; blk++ {
						for tid := int64(0); tid < redBlock; tid++ {
							lane := tid & 31
							for u0 := (blk*redBlock+(tid-lane))*b + lane; u0 < units; u0 += grid * redBlock * b {
								for r := int64(0); r < b; r++ {
									if lu := min(u0+r*32, units-1); lu < 0 || (lu*u+u)*n > slices*k || (lu+1)*q > slices {
										t.Fatalf("size %d k %d S %d: load of unit %d out of range", size, k, slices, lu)
									}
									un := u0 + r*32
									if un >= units {
										continue
									}
									for qq := int64(0); qq < q; qq++ {
										s := un*q + qq // the slice whose dy and y it reads
										for j := int64(0); j < k; j++ {
											e := qq*k + j
											idx := (un*u+e/n)*n + e%n
											if idx/k != s {
												t.Fatalf("size %d k %d S %d: element %d in slice %d, thread's %d", size, k, slices, idx, idx/k, s)
											}
											seen[idx]++
										}
									}
								}
							}
							if blk == grid-1 && tid < slices-units*q {
								s := units*q + tid
								for j := int64(0); j < k; j++ {
									seen[s*k+j]++
								}
							}
						}
					}
					for i, c := range seen {
						if c != 1 {
							t.Fatalf("size %d k %d S %d grid %d: element %d covered %d times", size, k, slices, grid, i, c)
						}
					}
				}
			}
		}
	}
}

// TestReduceInnerPolicy checks which plans take the packed inner form:
// by default every op of f32, f16 and bf16 along an innermost axis of a k
// it serves over at least 2^16 slices; the staged form for the other k
// of the 16-bit dtypes (f32 and f64 off the mapping) and under BARACUDA_REDUCE_SHORT=staged (the policy
// before the packed form) and staged-always; never neither.
func TestReduceInnerPolicy(t *testing.T) {
	for _, op := range ReduceOps() {
		for _, dt := range dtype.All {
			packed := dt.Size() != 8
			for _, c := range []struct {
				shape []int
				env   string
				want  string
			}{
				{[]int{4194304, 4}, "", ifs(packed, "inner", "")},
				{[]int{1 << 16, 3}, "", ifs(packed, "inner", "")},
				{[]int{1 << 16, 16}, "", ifs(packed, "inner", "")},
				{[]int{1 << 16, 5}, "", ifs(dt.Size() == 4, "inner", ifs(dt.Size() == 2, "short", ""))},
				{[]int{1 << 16, 9}, "", ifs(dt.Size() == 2, "short", "")},
				{[]int{4194304, 4}, "staged", ifs(dt.Size() == 2, "short", "")},
				{[]int{4194304, 4}, "never", ""},
				{[]int{100, 4}, "", ""},
				{[]int{100, 4}, "always", ifs(packed, "inner", "short")},
				{[]int{100, 7}, "always", ifs(dt.Size() == 4, "inner", "short")},
				{[]int{100, 9}, "always", "short"},
				{[]int{100, 4}, "staged-always", "short"},
				{[]int{1 << 16, 4}, "staged-always", "short"},
			} {
				t.Setenv(reduceShortEnv, c.env)
				p, err := NewReduceBackward(ReduceDesc{Op: op, DType: dt, Shape: c.shape, Axis: 1, Correction: 1})
				if err != nil {
					t.Fatal(err)
				}
				name := p.Kernel().Name
				got := ""
				if p.shortK != nil {
					got = name[strings.LastIndexByte(name, '_')+1:]
				}
				if got != c.want {
					t.Errorf("%s %s %v %q: kernel %s, want variant %q", op, dt, c.shape, c.env, name, c.want)
				}
			}
		}
	}
}

// ifs is a if c, else b.
func ifs(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}
