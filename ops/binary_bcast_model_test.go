package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
)

// A CPU model of the bcast kernels' index arithmetic, checked against the
// float64 reference over random broadcasts (TestBcastModel; the fuzz target
// in binary_bcast_test.go uses it too).

// bcastModel runs the bcast kernels' index arithmetic on the CPU (a
// model of gen/bcast.cuh, the tile or general phases as Run picks them,
// with mul's math in float64) over memories laid out as the tensors say,
// and returns da and db in their shapes' row-major order.
func bcastModel(t *testing.T, p *BinaryBackward, ts [5]*Tensor, dy, a, b []float64) (da, db []float64) {
	mem := [5][]float64{}
	vals := [3][]float64{dy, a, b}
	for i, tp := range ts {
		if tp == nil {
			continue
		}
		span := int64(1)
		for d := range tp.Shape {
			span += int64(tp.Shape[d]-1) * tp.strideOf(d)
		}
		if numel(tp.Shape) == 0 {
			span = 0
		}
		mem[i] = make([]float64, span)
		for j := range mem[i] {
			mem[i][j] = math.NaN()
		}
		if i < 3 {
			for j, off := range offsetsOf(tp) {
				mem[i][off] = vals[i][j]
			}
		}
	}
	apply := func(g, av, bv float64) (float64, float64) { return g * bv, g * av }
	ws := map[int64]float64{} // byte offset -> partial
	put := func(off int64, v float64) {
		if _, dup := ws[off]; dup {
			t.Fatalf("workspace byte %d written twice", off)
		}
		ws[off] = v
	}
	msize := int64(8)
	if p.desc.DType.OpMath() == "f32" {
		msize = 4
	}
	contiguous := true
	for _, tp := range ts {
		if tp != nil && !tp.isContiguous() {
			contiguous = false
		}
	}
	if p.bc.tileOK && contiguous {
		L := p.bc.tile
		N := int64(16 / p.desc.DType.Size())
		R, C := L.r, L.c
		idx := func(kind int32, r, c int64) int64 {
			switch kind {
			case bcastFull:
				return r*C + c
			case bcastCol:
				return c
			case bcastRow:
				return r
			}
			return 0
		}
		for tile := int64(0); tile < L.nrt*L.nct; tile++ {
			rt, ct := tile/L.nct, tile%L.nct
			r0, r1 := rt*L.rows, min(R, rt*L.rows+L.rows)
			// A single row is shared by the block's 256 threads, as one
			// warp of 256 lanes.
			flat := R == 1
			lanes, warps := int64(32), int64(bcastWarps)
			if flat {
				lanes, warps = bcastWarps*32, 1
			}
			cbase := ct * int64(L.j) * lanes * N
			var col [2][bcastWarps][32][16]float64
			var all [2]float64
			for w := int64(0); w < warps; w++ {
				for r := r0 + w; r < r1; r += bcastWarps {
					var row [2]float64
					for lane := int64(0); lane < lanes; lane++ {
						for jp := int64(0); jp < int64(L.j); jp++ {
							c := cbase + (jp*lanes+lane)*N
							if c >= C {
								break
							}
							for j := int64(0); j < N && c+j < C; j++ {
								ga, gb := apply(mem[0][r*C+c+j], mem[1][idx(L.kindA, r, c+j)], mem[2][idx(L.kindB, r, c+j)])
								for o, g := range [2]float64{ga, gb} {
									if ts[3+o] == nil {
										continue
									}
									switch [2]int32{L.kindA, L.kindB}[o] {
									case bcastFull:
										mem[3+o][r*C+c+j] = g
									case bcastCol:
										if jp != 0 || flat {
											t.Fatalf("a column sum with J = %d, R = %d", L.j, R)
										}
										col[o][w][lane][j] += g
									case bcastRow:
										row[o] += g
									default:
										all[o] += g
									}
								}
							}
						}
					}
					for o, part := range [2]int32{L.partA, L.partB} {
						if ts[3+o] != nil && [2]int32{L.kindA, L.kindB}[o] == bcastRow {
							if part != 0 {
								put([2]int64{L.wsA, L.wsB}[o]+(ct*R+r)*msize, row[o])
							} else {
								mem[3+o][r] = row[o]
							}
						}
					}
				}
			}
			for o, part := range [2]int32{L.partA, L.partB} {
				kind := [2]int32{L.kindA, L.kindB}[o]
				base := [2]int64{L.wsA, L.wsB}[o]
				if ts[3+o] == nil {
					continue
				}
				if kind == bcastScalar {
					if part != 0 {
						put(base+tile*msize, all[o])
					} else {
						mem[3+o][0] = all[o]
					}
				}
				if kind == bcastCol {
					for c := int64(0); c < 32*N; c++ {
						s := 0.0
						for w := 0; w < bcastWarps; w++ {
							s += col[o][w][c/N][c%N]
						}
						if cbase+c < C {
							if part != 0 {
								put(base+(rt*C+cbase+c)*msize, s)
							} else {
								mem[3+o][cbase+c] = s
							}
						}
					}
				}
			}
		}
		for o, part := range [2]int32{L.partA, L.partB} {
			if ts[3+o] == nil || part == 0 {
				continue
			}
			base := [2]int64{L.wsA, L.wsB}[o]
			read := func(i int64) float64 {
				off := base + i*msize
				if off+msize > p.WorkspaceSize() {
					t.Fatalf("partial %d at byte %d is past the workspace (%d bytes)", i, off, p.WorkspaceSize())
				}
				v, ok := ws[off]
				if !ok {
					t.Fatalf("partial %d at byte %d was never written", i, off)
				}
				return v
			}
			switch [2]int32{L.kindA, L.kindB}[o] {
			case bcastScalar:
				s := 0.0
				for i := int64(0); i < L.nrt*L.nct; i++ {
					s += read(i)
				}
				mem[3+o][0] = s
			default:
				// Warp w sums the partials w, w + 8, ..., then the warps'
				// sums are added in warp order.
				n, parts := C, L.nrt
				if [2]int32{L.kindA, L.kindB}[o] == bcastRow {
					n, parts = R, L.nct
				}
				for i := int64(0); i < n; i++ {
					s := 0.0
					for w := int64(0); w < bcastWarps; w++ {
						sw := 0.0
						for q := w; q < parts; q += bcastWarps {
							sw += read(q*n + i)
						}
						s += sw
					}
					mem[3+o][i] = s
				}
			}
		}
	} else {
		for out := 0; out < 2; out++ {
			if ts[3+out] == nil || p.bc.gen[out].nk == 0 {
				continue
			}
			var L bcastLayout
			g := p.bc.gen[out]
			L.nk, L.nr, L.chunk, L.nchunks = g.nk, g.nr, g.chunk, g.nchunks
			L.wsB = p.bc.genOffB
			p.generalDims(&ts, out, &L)
			base := [2]int64{0, L.wsB}[out]
			kept := func(k int64) (o [4]int64) {
				for d := int(L.krank) - 1; d >= 0; d-- {
					i := k % L.kdim[d]
					k /= L.kdim[d]
					for u := 0; u < 4; u++ {
						o[u] += i * L.kstride[u][d]
					}
				}
				return o
			}
			for item := int64(0); item < L.nk*L.nchunks; item++ {
				ch, k := item/L.nk, item%L.nk
				ko := kept(k)
				s := 0.0
				for r := ch * L.chunk; r < min(L.nr, ch*L.chunk+L.chunk); r++ {
					var ro [3]int64
					rem := r
					for d := int(L.rrank) - 1; d >= 0; d-- {
						i := rem % L.rdim[d]
						rem /= L.rdim[d]
						for u := 0; u < 3; u++ {
							ro[u] += i * L.rstride[u][d]
						}
					}
					ga, gb := apply(mem[0][ko[0]+ro[0]], mem[1][ko[1]+ro[1]], mem[2][ko[2]+ro[2]])
					s += [2]float64{ga, gb}[out]
				}
				if L.nchunks == 1 {
					mem[3+out][ko[3]] = s
				} else {
					off := base + (ch*L.nk+k)*msize
					if off+msize > p.WorkspaceSize() {
						t.Fatalf("general partial at byte %d past the workspace (%d)", off, p.WorkspaceSize())
					}
					put(off, s)
				}
			}
			if L.nchunks > 1 {
				for k := int64(0); k < L.nk; k++ {
					s := 0.0
					for w := int64(0); w < bcastWarps; w++ {
						sw := 0.0
						for ch := w; ch < L.nchunks; ch += bcastWarps {
							sw += ws[base+(ch*L.nk+k)*msize]
						}
						s += sw
					}
					mem[3+out][kept(k)[3]] = s
				}
			}
		}
	}
	var res [2][]float64
	for o := 0; o < 2; o++ {
		if ts[3+o] == nil {
			continue
		}
		for _, off := range offsetsOf(ts[3+o]) {
			res[o] = append(res[o], mem[3+o][off])
		}
	}
	return res[0], res[1]
}

// offsetsOf lists a tensor's element offsets in row-major index order.
func offsetsOf(tp *Tensor) []int64 {
	n := numel(tp.Shape)
	offs := make([]int64, n)
	for i := int64(0); i < n; i++ {
		rem, off := i, int64(0)
		for d := len(tp.Shape) - 1; d >= 0; d-- {
			off += rem % int64(tp.Shape[d]) * tp.strideOf(d)
			rem /= int64(tp.Shape[d])
		}
		offs[i] = off
	}
	return offs
}

// checkBcastModel compares the model's da and db with the reference for
// one pattern, contiguous and (strided) transposed.
func checkBcastModel(t *testing.T, dt dtype.DType, shape, as, bs []int, noDA, noDB bool, rng *rand.Rand) {
	t.Helper()
	p, err := NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dt, Shape: shape, AShape: as, BShape: bs})
	if err != nil {
		t.Fatalf("%v a%v b%v: %v", shape, as, bs, err)
	}
	if !p.Broadcasting() {
		return
	}
	vals := [3][]float64{}
	for i, s := range [3][]int{shape, as, bs} {
		vals[i] = make([]float64, numel(s))
		for j := range vals[i] {
			vals[i][j] = float64(rng.IntN(17) - 8)
		}
	}
	wantA, wantB := ref.BinaryBroadcastBackward("mul", shape, as, bs, vals[0], vals[1], vals[2], 0)
	for _, transposed := range []bool{false, true} {
		var ts [5]*Tensor
		for i, s := range [5][]int{shape, as, bs, as, bs} {
			if (i == 3 && noDA) || (i == 4 && noDB) {
				continue
			}
			tt := Tensor{DType: dt, Shape: s}
			if transposed {
				tt.Strides = colMajor(s)
			}
			ts[i] = &tt
		}
		da, db := bcastModel(t, p, ts, vals[0], vals[1], vals[2])
		for o, pair := range [2][2][]float64{{da, wantA}, {db, wantB}} {
			if ts[3+o] == nil {
				continue
			}
			for i := range pair[1] {
				if pair[0][i] != pair[1][i] {
					t.Fatalf("%s %v a%v b%v transposed %v: %s[%d] = %v, want %v", dt, shape, as, bs, transposed,
						[2]string{"da", "db"}[o], i, pair[0][i], pair[1][i])
				}
			}
		}
	}
}

// TestBcastModel: the kernels' index arithmetic, run on the CPU with
// small integers (exact sums), gives the reference's gradients for the
// suite's patterns and for random ones.
func TestBcastModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 1))
	patterns := [][3][]int{
		{{257, 1000}, {257, 1000}, {1000}},
		{{257, 1000}, {257, 1000}, {257, 1}},
		{{257, 1000}, {257, 1000}, {}},
		{{1000}, {}, {1000}},
		{{33, 5}, {5}, {33, 5}},
		{{31, 1}, {31, 1}, {1}},
		{{33, 65}, {33, 1}, {1, 65}},
		{{33, 65}, {65}, {1, 65}},
		{{4, 33, 65}, {4, 33, 65}, {4, 1, 65}},
		{{2, 3, 4, 5}, {3, 1, 5}, {2, 1, 4, 1}},
		{{2, 1, 3, 2, 1, 2, 3, 2}, {1, 1, 3, 1, 1, 2, 1, 2}, {2, 1, 3, 2, 1, 2, 3, 2}},
		{{0, 5}, {0, 5}, {5}},
		{{5, 0}, {}, {5, 1}},
		{{4099, 30}, {4099, 30}, {30}},
		{{9, 70001}, {9, 70001}, {9, 1}},
		{{3, 2000, 2}, {3, 1, 2}, {3, 2000, 2}},
		{{100003}, {100003}, {}},
	}
	for _, dt := range dtype.All {
		for _, pt := range patterns {
			checkBcastModel(t, dt, pt[0], pt[1], pt[2], false, false, rng)
		}
	}
	checkBcastModel(t, dtype.F32, []int{257, 1000}, []int{257, 1000}, []int{1000}, true, false, rng)
	// A single row of more than 256 packs a thread per tile: J = 2, and
	// the last tile half full.
	checkBcastModel(t, dtype.F32, []int{1<<21 + 1024}, []int{1<<21 + 1024}, []int{}, false, false, rng)
	checkBcastModel(t, dtype.BF16, []int{4, 33, 65}, []int{4, 33, 65}, []int{4, 1, 65}, false, true, rng)
	for i := 0; i < 300; i++ {
		shape, as, bs := randomBroadcast(rng)
		checkBcastModel(t, dtype.All[i%4], shape, as, bs, i%7 == 0, i%7 == 1, rng)
	}
}

// randomBroadcast draws a shape of rank 0..5 (at most 20000 elements) and two operand shapes that
// broadcast to it, each dim kept or 1, leading dims sometimes dropped.
func randomBroadcast(rng *rand.Rand) (shape, as, bs []int) {
	rank := rng.IntN(6)
	shape = make([]int, rank)
	for d := range shape {
		shape[d] = []int{1, 2, 3, 7, 33, 65, 130}[rng.IntN(7)]
		for numel(shape[:d+1]) > 20000 {
			shape[d] = []int{1, 2, 3}[rng.IntN(3)]
		}
	}
	op := func() []int {
		drop := rng.IntN(rank + 1)
		s := make([]int, 0, rank-drop)
		for d := drop; d < rank; d++ {
			if rng.IntN(2) == 0 {
				s = append(s, 1)
			} else {
				s = append(s, shape[d])
			}
		}
		return s
	}
	return shape, op(), op()
}
