package conform

// ReduceShortCases are the short mapping's shapes (ops/reduce_short.go): a
// single axis of k in {1, ..., 8, 10, 12, 14, 15, 16} positions,
// innermost ([1001, k] along axis 1: one chunk, or several with a partial
// last one, and for most k a chunk that ends off a 16-byte pack; for the
// packed form, units of 2, 4 or 8 slices with 1 to 7 slices left over for
// the last block; [7, 1, k] along axis 2: fewer slices than a unit) and
// outer ([k, 1000] along axis 0: 250 vectors of f32, f16 and
// bf16; [3, k, 64] along axis 1: several outer indices), contiguous (the
// short kernel, where the plan has it), with every slice's elements equal
// (ties; prod: zeros), with dy and y one element off 16 bytes (the short
// kernel too), and unaligned, 8-byte-aligned, padded, transposed and mixed
// (the other paths, which Run falls back to). An inner extent that is no
// multiple of a vector ([k, 1001] along axis 0) keeps the other paths.
// Var and Std also run with c = 0, c = k (N - c = 0) and c = k + 0.5.
// Under ReduceShortEnv=always the plans take the mapping for these;
// without it only the shapes of ReduceShortLargeCases (2^16 slices and
// more) do. quick keeps k in {1, 3, 4, 8, 16} and the other paths' layouts
// for k = 3 only.
func ReduceShortCases(quick bool) []ReduceCase {
	ks := []int{1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 15, 16}
	if quick {
		ks = []int{1, 3, 4, 8, 16}
	}
	mixed := [4]func([]int) Layout{Transposed, Padded, Contiguous, Padded}
	// x and dx aligned, y and dy one element off: the short kernel, which
	// reads an outer pack's dy and y element by element.
	offg := [4]func([]int) Layout{Contiguous, Unaligned, Unaligned, Contiguous}
	var cs []ReduceCase
	for _, k := range ks {
		for _, s := range []struct {
			shape []int
			axis  int
		}{{[]int{1001, k}, 1}, {[]int{k, 1000}, 0}, {[]int{3, k, 64}, 1}, {[]int{k, 1001}, 0}, {[]int{7, 1, k}, 2}} {
			cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Contiguous)},
				ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Contiguous), Data: DataEqual},
				ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: offg},
				ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Unaligned)})
			if !quick || k == 3 {
				cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Shifted(2))},
					ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Padded)},
					ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Transposed)},
					ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: mixed})
			}
		}
		for _, c := range []float64{0, float64(k), float64(k) + 0.5} {
			cs = append(cs, ReduceCase{Shape: []int{600, k}, Axis: 1, Correction: c, Layouts: same4(Contiguous)},
				ReduceCase{Shape: []int{k, 600}, Axis: 0, Correction: c, Layouts: same4(Contiguous)})
		}
	}
	return cs
}

// ReduceShortLargeCases are shapes whose plans take the short mapping by
// default (k <= 16 and at least 2^16 slices): the two layouts at
// 2^18 elements, a last block of one slice, several outer indices, dims
// of 1 around the axis, and innermost axes of the packed inner form with
// slices left over past its last whole unit (2 and 6: one slice; 5: f32
// packed, 16-bit staged); contiguous, and with every slice's elements
// equal.
// quick keeps the first two.
func ReduceShortLargeCases(quick bool) []ReduceCase {
	shapes := []struct {
		shape []int
		axis  int
	}{{[]int{4, 65536}, 0}, {[]int{65536, 4}, 1}, {[]int{65537, 3}, 1}, {[]int{16, 65536}, 0},
		{[]int{2, 5, 32768}, 1}, {[]int{1, 65536, 1, 16, 1}, 3}, {[]int{65541, 2}, 1}, {[]int{65537, 6}, 1},
		{[]int{65537, 5}, 1}}
	if quick {
		shapes = shapes[:2]
	}
	var cs []ReduceCase
	for _, s := range shapes {
		cs = append(cs, ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Contiguous)},
			ReduceCase{Shape: s.shape, Axis: s.axis, Correction: 1, Layouts: same4(Contiguous), Data: DataEqual})
	}
	return cs
}
