package ops

import (
	"testing"
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// Tests of reduce's kernel layout and launch parameters (reduce_launch.go):
// the layout's ABI, the slice dims and strides it builds, and the
// constants the launcher shares with gen/reduce.cuh.

func init() {
	abiPackers["reduce"] = func(a *driver.Args) {
		(&ReduceBackward{}).pack(a, &ReduceArgs{}, &reduceLayout{})
	}
}

func TestReduceLayoutMatchesCUDA(t *testing.T) {
	if got := unsafe.Sizeof(reduceLayout{}); got != 432 {
		t.Fatalf("reduceLayout is %d bytes, ReduceLayout in gen/zlayouts.cuh 432", got)
	}
	f := familyByName("reduce")
	if f == nil {
		t.Fatal("no reduce family in the table")
	}
	last := f.params[len(f.params)-1]
	if last.size != int(unsafe.Sizeof(reduceLayout{})) {
		t.Errorf("spec layout parameter is %d bytes, reduceLayout %d", last.size, unsafe.Sizeof(reduceLayout{}))
	}
	// Field offsets the C struct has (i64 x5, double, int x8, arrays).
	var L reduceLayout
	offs := []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"scale", unsafe.Offsetof(L.scale), 40},
		{"mapping", unsafe.Offsetof(L.mapping), 48},
		{"srank", unsafe.Offsetof(L.srank), 64},
		{"cvec", unsafe.Offsetof(L.cvec), 68},
		{"phase", unsafe.Offsetof(L.phase), 72},
		{"sdim", unsafe.Offsetof(L.sdim), 80},
		{"sstride", unsafe.Offsetof(L.sstride), 136},
		{"kstride", unsafe.Offsetof(L.kstride), 360},
		{"vstride", unsafe.Offsetof(L.vstride), 376},
	}
	for _, o := range offs {
		if o.got != o.want {
			t.Errorf("reduceLayout.%s at offset %d, want %d", o.name, o.got, o.want)
		}
	}
}

func TestReduceLayout(t *testing.T) {
	mk := func(op ReduceOp, dt dtype.DType, shape []int, axis int) *ReduceBackward {
		p, err := NewReduceBackward(ReduceDesc{Op: op, DType: dt, Shape: shape, Axis: axis, Correction: 1})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("contiguous inner axis", func(t *testing.T) {
		p := mk(ReduceMax, dtype.F32, []int{4, 5, 6}, 2)
		a := redArgs(p)
		var L reduceLayout
		p.layout(&a, &L)
		if L.mapping != redRow || L.vec != 1 || L.srank != 1 || L.sdim[0] != 20 || L.kstride != [2]int64{1, 1} {
			t.Fatalf("layout %+v", L)
		}
		// x and dx step 6 per slice; dy and y 1.
		if L.sstride[0][0] != 6 || L.sstride[3][0] != 6 || L.sstride[1][0] != 1 || L.sstride[2][0] != 1 {
			t.Errorf("strides %v", L.sstride)
		}
	})
	t.Run("contiguous middle axis", func(t *testing.T) {
		p := mk(ReduceVar, dtype.F32, []int{4, 5, 6}, 1)
		a := redArgs(p)
		var L reduceLayout
		p.layout(&a, &L)
		// Slices [4, 6] cannot merge for x (6*5 != 6), so two dims remain.
		if L.mapping != redCol || L.srank != 2 || L.sdim[0] != 4 || L.sdim[1] != 6 || L.kstride != [2]int64{6, 6} {
			t.Fatalf("layout %+v", L)
		}
		if L.sstride[0] != [7]int64{30, 1} || L.sstride[2] != [7]int64{6, 1} {
			t.Errorf("strides %v", L.sstride)
		}
		if L.group != 8 || L.slices != 24 || L.k != 5 || L.nchunks != 1 || L.tiles != 1 {
			t.Errorf("geometry %+v", L)
		}
	})
	t.Run("col threads take 4 adjacent slices", func(t *testing.T) {
		p := mk(ReduceMax, dtype.F32, []int{3, 5, 8}, 1)
		a := redArgs(p)
		var L reduceLayout
		p.layout(&a, &L)
		if L.mapping != redCol || L.cvec != 4 || L.srank != 2 || L.tiles != 1 || L.vstride != [2]int64{1, 1} {
			t.Fatalf("layout %+v", L)
		}
		a.DX.Buf.Addr += 8 // dx 8-byte but not 16-byte aligned: 8-byte accesses
		p.layout(&a, &L)
		if L.cvec != 2 {
			t.Errorf("8-byte aligned dx: cvec %d", L.cvec)
		}
		a.DX.Buf.Addr -= 4 // dx only 4-byte aligned
		p.layout(&a, &L)
		if L.cvec != 1 {
			t.Errorf("misaligned dx: cvec %d", L.cvec)
		}
		a = redArgs(p)
		a.DY.Strides = []int{8, 8, 3} // only dy/y strides change: still vectorizable
		a.DY.Buf.Size = 4 * 200
		p.layout(&a, &L)
		if L.cvec != 4 || L.vstride[1] != 3 {
			t.Errorf("strided dy: cvec %d vstride %v", L.cvec, L.vstride)
		}
	})
	t.Run("outer axis merges the rest", func(t *testing.T) {
		p := mk(ReduceSum, dtype.BF16, []int{7, 3, 5}, 0)
		a := redArgs(p)
		var L reduceLayout
		p.layout(&a, &L)
		if L.mapping != redCol || L.srank != 1 || L.sdim[0] != 15 || L.kstride[1] != 15 || L.kstride[0] != 0 {
			t.Fatalf("layout %+v", L)
		}
	})
	t.Run("transposed x picks the row mapping", func(t *testing.T) {
		p := mk(ReduceNorm2, dtype.F32, []int{6, 4}, 0)
		a := redArgs(p)
		a.X.Strides = []int{1, 6} // column-major: the axis is x's fastest dim
		var L reduceLayout
		p.layout(&a, &L)
		if L.mapping != redRow || L.vec != 0 || L.kstride != [2]int64{1, 4} {
			t.Fatalf("layout %+v", L)
		}
		if L.srank != 1 || L.sstride[0][0] != 6 || L.sstride[3][0] != 1 {
			t.Errorf("strides %v", L.sstride)
		}
	})
	t.Run("slice dims ordered by x strides", func(t *testing.T) {
		p := mk(ReduceProd, dtype.F16, []int{2, 3, 4, 5}, 3)
		a := redArgs(p)
		a.X.Strides = []int{5, 10, 30, 1} // dims 0..2 reversed in memory
		a.X.Buf.Size = 2 * 120
		var L reduceLayout
		p.layout(&a, &L)
		// Ordered [4, 3, 2] by x's strides [30, 10, 5]: mergeable for x but
		// not for dx (row-major), so three dims remain.
		if L.mapping != redRow || L.srank != 3 || L.sdim[0] != 4 || L.sdim[1] != 3 || L.sdim[2] != 2 {
			t.Fatalf("layout %+v", L)
		}
		if L.sstride[0][0] != 30 || L.sstride[3][0] != 5 || L.sstride[3][2] != 60 {
			t.Errorf("strides %v", L.sstride)
		}
	})
	t.Run("size-1 dims and k == 1", func(t *testing.T) {
		p := mk(ReduceMean, dtype.F64, []int{1, 9, 1}, 2)
		a := redArgs(p)
		var L reduceLayout
		p.layout(&a, &L)
		if L.mapping != redCol || L.srank != 1 || L.sdim[0] != 9 || L.group != 1 || L.k != 1 {
			t.Fatalf("layout %+v", L)
		}
	})
	t.Run("scalar slices", func(t *testing.T) {
		p := mk(ReduceLogSumExp, dtype.F32, []int{1, 1000}, 1)
		a := redArgs(p)
		var L reduceLayout
		p.layout(&a, &L)
		if L.mapping != redRow || L.srank != 0 || L.slices != 1 || L.vec != 1 {
			t.Fatalf("layout %+v", L)
		}
	})
}

// TestReduceReducedFormLayout: dy and y given without the reduced axis
// (keepdim=False) give the kernels the same layout as the keepdim form of
// the same memory, contiguous or strided, for every axis, down to a rank-1
// input whose dy and y are 0-d.
func TestReduceReducedFormLayout(t *testing.T) {
	for _, c := range []struct {
		shape []int
		axis  int
	}{{[]int{4, 7, 9}, 0}, {[]int{4, 7, 9}, 1}, {[]int{4, 7, 9}, 2}, {[]int{3, 1, 5, 2}, 2}, {[]int{33}, 0}} {
		for _, op := range []ReduceOp{ReduceSum, ReduceMax, ReduceStd} {
			p, err := NewReduceBackward(ReduceDesc{Op: op, DType: dtype.F32, Shape: c.shape, Axis: c.axis, Correction: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.ReducedShape(); len(got) != len(c.shape)-1 {
				t.Fatalf("%v axis %d: reduced shape %v", c.shape, c.axis, got)
			}
			for _, strided := range []bool{false, true} {
				kept := redArgs(p)
				red := kept
				red.DY.Shape, red.Y.Shape = p.ReducedShape(), p.ReducedShape()
				if strided {
					// Column-major dy and y, in both forms.
					kept.DY.Strides, red.DY.Strides = colMajor(p.KeepdimShape()), colMajor(p.ReducedShape())
					kept.Y.Strides, red.Y.Strides = kept.DY.Strides, red.DY.Strides
				}
				if err := p.Check(&red); err != nil {
					t.Fatalf("%v axis %d %s strided %v: %v", c.shape, c.axis, op, strided, err)
				}
				var lk, lr reduceLayout
				p.layout(&kept, &lk)
				p.layout(&red, &lr)
				if lk != lr {
					t.Errorf("%v axis %d %s strided %v: layout %+v, keepdim form %+v", c.shape, c.axis, op, strided, lr, lk)
				}
			}
		}
	}
}

// colMajor is the column-major strides of shape (first dim fastest).
func colMajor(shape []int) []int {
	st := make([]int, len(shape))
	n := 1
	for d := range shape {
		st[d] = n
		n *= shape[d]
	}
	return st
}
