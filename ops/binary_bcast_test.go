package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

func init() {
	abiPackers["bcast"] = func(a *driver.Args) {
		(&BinaryBackward{}).packBcast(a, &[5]*Tensor{}, 0, &bcastLayout{})
	}
}

func TestBinaryBroadcastErrors(t *testing.T) {
	cases := []struct {
		name string
		desc BinaryDesc
		want error
		msg  string
	}{
		{"a dim", BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: []int{4, 5}, AShape: []int{3}}, ErrShape,
			"AShape [3] does not broadcast to Shape [4 5]: dim 0 is 3, must be 1 or 5"},
		{"b dim", BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: []int{4, 5}, BShape: []int{2, 5}}, ErrShape,
			"BShape [2 5] does not broadcast to Shape [4 5]: dim 0 is 2, must be 1 or 4"},
		{"b rank", BinaryDesc{Op: BinaryAdd, DType: dtype.F16, Shape: []int{5}, BShape: []int{1, 5}}, ErrShape,
			"BShape [1 5] has rank 2, more than Shape [5] (rank 1)"},
		{"a negative", BinaryDesc{Op: BinaryAdd, DType: dtype.F16, Shape: []int{5}, AShape: []int{-1}}, ErrShape,
			"AShape dim 0 is -1"},
		{"a rank 9", BinaryDesc{Op: BinaryAdd, DType: dtype.F16, Shape: []int{5}, AShape: make([]int, 9)}, ErrRank,
			"AShape rank 9"},
		{"zero against 3", BinaryDesc{Op: BinaryDiv, DType: dtype.F64, Shape: []int{3}, AShape: []int{0}}, ErrShape,
			"dim 0 is 0, must be 1 or 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewBinaryBackward(c.desc)
			wantPlanError(t, err, c.want, "BinaryBackward", c.msg)
		})
	}
}

func TestBinaryBroadcastPlan(t *testing.T) {
	// Shapes equal to Shape keep the elementwise kernel and no workspace.
	p, err := NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: []int{4, 5}, AShape: []int{4, 5}, BShape: []int{4, 5}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Broadcasting() || p.Kernel().Name != "binary_bw_mul_f32" || p.WorkspaceSize() != 0 || p.Desc().AShape != nil {
		t.Errorf("equal shapes: broadcasting %v, kernel %s, workspace %d, desc %+v", p.Broadcasting(), p.Kernel().Name,
			p.WorkspaceSize(), p.Desc())
	}
	p, err = NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.BF16, Shape: []int{8192, 4096}, BShape: []int{4096}})
	if err != nil {
		t.Fatal(err)
	}
	if k := p.Kernel(); k.Name != "bcast_bw_mul_bf16_tile" || k.Family != "bcast" {
		t.Errorf("Kernel() = %+v", k)
	}
	if pr := p.Precision(); pr.Accumulator != "f32" || !pr.Deterministic || !pr.BitStable {
		t.Errorf("Precision() = %+v", pr)
	}
	d := p.Desc()
	if fmt.Sprint(d.AShape, d.BShape) != "[8192 4096] [4096]" {
		t.Errorf("Desc() shapes %v %v", d.AShape, d.BShape)
	}
	// bf16 packs are 8 columns, a lane's one pack: 16 column tiles, 128
	// row tiles of 64 rows; db's column sums go through 128 partials each.
	L := p.bc.tile
	if !p.bc.tileOK || L.r != 8192 || L.c != 4096 || L.j != 1 || L.nct != 16 || L.nrt != 128 || L.rows != 64 ||
		L.kindA != bcastFull || L.kindB != bcastCol || L.partA != 0 || L.partB != 1 {
		t.Errorf("tile layout %+v", L)
	}
	if want := int64(128 * 4096 * 4); p.WorkspaceSize() != want {
		t.Errorf("WorkspaceSize() = %d, want %d", p.WorkspaceSize(), want)
	}
	// A row sum: a warp takes a whole row, so no partials (the workspace
	// is the general path's, for strided tensors).
	p, _ = NewBinaryBackward(BinaryDesc{Op: BinaryAdd, DType: dtype.F32, Shape: []int{8192, 4096}, BShape: []int{8192, 1}})
	if L := p.bc.tile; L.kindB != bcastRow || L.nct != 1 || L.j != 32 || L.partB != 0 || p.bc.tileWS != 0 {
		t.Errorf("row sum: layout %+v, tile workspace %d", L, p.bc.tileWS)
	}
	// A 0-d b: one row of 8M packs, 16 a thread, in 2048 tiles of 256
	// threads, a partial each.
	p, _ = NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: []int{8192, 4096}, BShape: []int{}})
	if L := p.bc.tile; L.kindB != bcastScalar || L.partB != 1 || L.r != 1 || L.j != 16 || L.nrt != 1 || L.nct != bcastTiles {
		t.Errorf("0-d b: layout %+v", L)
	}
	// [B, T, D] * [B, 1, D] takes the general path.
	p, _ = NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: []int{8, 128, 64}, BShape: []int{8, 1, 64}})
	if p.bc.tileOK || p.bc.gen[1].nk != 8*64 || p.bc.gen[1].nr != 128 || p.bc.gen[0].nr != 1 {
		t.Errorf("[B,T,D]x[B,1,D]: tile %v, general %+v", p.bc.tileOK, p.bc.gen)
	}
	if k := p.Kernel().Name; k != "bcast_bw_mul_f32_gen" || len(p.kernelRefs()) != 1 {
		t.Errorf("[B,T,D]x[B,1,D]: kernel %s, %d kernels to warm", k, len(p.kernelRefs()))
	}
	// A tile plan warms its general kernel too (strided tensors take it).
	p, _ = NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: []int{8, 64}, BShape: []int{64}})
	if ks := p.kernelRefs(); len(ks) != 2 || ks[0].name != "bcast_bw_mul_f32_tile" || ks[1].name != "bcast_bw_mul_f32_gen" {
		t.Errorf("tile plan warms %v", ks)
	}
}

// TestBroadcastCheck: operands are checked against their own shapes, and
// the workspace against WorkspaceSize.
func TestBroadcastCheck(t *testing.T) {
	p, err := NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: []int{300, 64}, BShape: []int{64}})
	if err != nil {
		t.Fatal(err)
	}
	ws := p.WorkspaceSize()
	if ws == 0 {
		t.Fatal("no workspace for a column sum over 300 rows")
	}
	ok := func() BinaryArgs {
		return BinaryArgs{DY: fakeTensor(dtype.F32, 300, 64), A: fakeTensor(dtype.F32, 300, 64), B: fakeTensor(dtype.F32, 64),
			DA: fakeTensor(dtype.F32, 300, 64), DB: fakeTensor(dtype.F32, 64),
			Workspace: driver.Buffer{Addr: 0x200000, Size: ws}}
	}
	a := ok()
	if err := p.Check(&a); err != nil {
		t.Fatalf("valid args: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(*BinaryArgs)
		want   error
		msg    string
	}{
		{"b full", func(a *BinaryArgs) { a.B = fakeTensor(dtype.F32, 300, 64) }, ErrShape, "b shape [300 64] must equal [64]"},
		{"db full", func(a *BinaryArgs) { a.DB = fakeTensor(dtype.F32, 300, 64) }, ErrShape, "db shape [300 64] must equal [64]"},
		{"no workspace", func(a *BinaryArgs) { a.Workspace = driver.Buffer{} }, ErrMissing, "workspace is required"},
		{"small workspace", func(a *BinaryArgs) { a.Workspace.Size = ws - 1 }, ErrBufferTooSmall, "workspace needs"},
		{"odd workspace", func(a *BinaryArgs) { a.Workspace.Addr += 8 }, ErrLayout, "16-byte aligned"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := ok()
			c.mutate(&a)
			wantPlanError(t, p.Check(&a), c.want, "BinaryBackward", c.msg)
		})
	}
}

// FuzzBinaryBroadcastDescriptor: random operand shapes never panic,
// errors match a sentinel, and an accepted small plan's model gives the
// reference's gradients.
func FuzzBinaryBroadcastDescriptor(f *testing.F) {
	f.Add(uint8(3), int8(3), int8(5), int8(1), int8(5), int8(3), int8(1), uint8(0), int64(0))
	f.Add(uint8(2), int8(4), int8(1), int8(-1), int8(1), int8(0), int8(0), uint8(3), int64(1))
	f.Fuzz(func(t *testing.T, dt uint8, d0, d1, a0, a1, b0, b1 int8, ranks uint8, seed int64) {
		shape := []int{int(d0), int(d1)}
		as := []int{int(a0), int(a1)}[:int(ranks)%3]
		bs := []int{int(b0), int(b1)}[2-int(ranks/3)%3:]
		desc := BinaryDesc{Op: BinaryMul, DType: dtype.DType(dt), Shape: shape, AShape: as, BShape: bs}
		p, err := NewBinaryBackward(desc)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("NewBinaryBackward: non-sentinel error %v", err)
			}
			return
		}
		args := BinaryArgs{DY: fakeTensor(desc.DType, shape...), A: fakeTensor(desc.DType, as...), B: fakeTensor(desc.DType, bs...),
			DA: fakeTensor(desc.DType, as...), Workspace: driver.Buffer{Addr: 0x300000, Size: p.WorkspaceSize()}}
		if err := p.Check(&args); err != nil && !isSentinel(err) {
			t.Fatalf("Check: non-sentinel error %v", err)
		}
		if numel(shape) <= 1<<14 {
			checkBcastModel(t, desc.DType, shape, as, bs, false, false, rand.New(rand.NewPCG(uint64(seed), 2)))
		}
	})
}

// TestBcastPrepareZeroAllocs: the Go share of a warm broadcasting Run
// (Check, the general path's dims and strides, argument packing)
// allocates nothing.
func TestBcastPrepareZeroAllocs(t *testing.T) {
	p, err := NewBinaryBackward(BinaryDesc{Op: BinaryMul, DType: dtype.F32, Shape: []int{4, 64, 32}, BShape: []int{4, 1, 32}})
	if err != nil {
		t.Fatal(err)
	}
	args := BinaryArgs{DY: fakeTensor(dtype.F32, 4, 64, 32), A: fakeTensor(dtype.F32, 4, 64, 32), B: fakeTensor(dtype.F32, 4, 1, 32),
		DA: fakeTensor(dtype.F32, 4, 64, 32), DB: fakeTensor(dtype.F32, 4, 1, 32),
		Workspace: driver.Buffer{Addr: 0x200000, Size: max(16, p.WorkspaceSize())}}
	n := testing.AllocsPerRun(100, func() {
		if err := p.Check(&args); err != nil {
			t.Fatal(err)
		}
		ts := [5]*Tensor{&args.DY, &args.A, &args.B, &args.DA, &args.DB}
		for out := 0; out < 2; out++ {
			var L bcastLayout
			p.generalDims(&ts, out, &L)
			a := driver.GetArgs()
			p.packBcast(a, &ts, args.Workspace.Addr, &L)
			driver.PutArgs(a)
		}
	})
	if n != 0 {
		t.Errorf("%.1f allocations per prepared Run, want 0", n)
	}
}
