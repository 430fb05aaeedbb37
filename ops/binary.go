package ops

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// BinaryOp is a two-input elementwise op whose backward BinaryBackward computes.
// With g = dy, the gradients are PyTorch's (docs/semantics.md, section 2):
type BinaryOp uint8

const (
	// BinaryAdd: y = a + alpha*b; da = g, db = alpha*g.
	BinaryAdd BinaryOp = iota + 1
	// BinarySub: y = a - alpha*b; da = g, db = -alpha*g.
	BinarySub
	// BinaryMul: da = g*b, db = g*a.
	BinaryMul
	// BinaryDiv: da = g/b, db = -g*((a/b)/b).
	BinaryDiv
	// BinaryMaximum: the larger input gets g, the other 0; a tie gives g/2
	// to each; if a or b is NaN both get g.
	BinaryMaximum
	// BinaryMinimum: as BinaryMaximum for the smaller input.
	BinaryMinimum
	// BinaryPow: y = a^b; da = 0 where b == 0 (even for NaN g), else
	// g*b*a^(b-1); db = 0 where a == 0 and b >= 0, else g*a^b*ln(a)
	// (so a == 0, b < 0 gives -inf*g).
	BinaryPow
	// BinaryAtan2: y = atan2(a, b); da = g*b/(a²+b²), db = -g*a/(a²+b²);
	// (0, 0) gives (0, -0) as PyTorch 2.11.
	BinaryAtan2
	// BinaryHypot: y = sqrt(a²+b²); da = g*a/y, db = g*b/y; NaN at (0, 0).
	BinaryHypot
	// BinaryLerp: y = a + w*(b-a) with a scalar weight w; da = g*(1-w), db = g*w.
	BinaryLerp
)

var binaryOpNames = [...]string{BinaryAdd: "add", BinarySub: "sub", BinaryMul: "mul", BinaryDiv: "div",
	BinaryMaximum: "maximum", BinaryMinimum: "minimum", BinaryPow: "pow", BinaryAtan2: "atan2",
	BinaryHypot: "hypot", BinaryLerp: "lerp"}

// String returns the op's lower-case name, e.g. "mul", as it appears in
// KernelInfo.Op, kernel names and error messages. An unknown op prints as
// BinaryOp(N).
func (op BinaryOp) String() string {
	if op >= 1 && int(op) < len(binaryOpNames) {
		return binaryOpNames[op]
	}
	return fmt.Sprintf("BinaryOp(%d)", uint8(op))
}

// BinaryOps lists every binary op.
func BinaryOps() []BinaryOp {
	return []BinaryOp{BinaryAdd, BinarySub, BinaryMul, BinaryDiv, BinaryMaximum, BinaryMinimum,
		BinaryPow, BinaryAtan2, BinaryHypot, BinaryLerp}
}

// needsSaved reports whether the op reads the forward inputs a and b.
func (op BinaryOp) needsSaved() bool {
	switch op {
	case BinaryAdd, BinarySub, BinaryLerp:
		return false
	}
	return true
}

// BinaryDesc describes a binary backward: op, dtype, dy's shape and a's
// and b's.
//
// Without AShape and BShape every operand has Shape. With them, a and b
// (and da and db) have shapes of their own that broadcast to Shape by
// PyTorch's rules: aligned from the last dim, each dim of the operand is
// Shape's or 1, and missing leading dims count as 1 (a 0-d operand, shape
// [], broadcasts to anything). dy has Shape, and da (db) receives the
// gradient summed over the dims a (b) is broadcast along, as PyTorch's
// autograd does with sum_to_size:
//
//	da[i] = sum over the dy indices j that broadcast a to i of da_j
//
// where da_j is the op's elementwise gradient at j (below) computed from
// dy[j] and a's and b's broadcast values. The sums accumulate in opmath
// (float32 for f16, bf16 and f32; float64 for f64) in a fixed order and are
// rounded once: two Runs of one plan on one GPU give the same bits. Such
// a plan needs a workspace (WorkspaceSize).
type BinaryDesc struct {
	Op    BinaryOp
	DType dtype.DType
	Shape []int // rank 0..8: dy's shape, and every operand's unless set below
	// AShape and BShape are a's and b's shapes (rank 0..8, broadcasting to
	// Shape); nil means Shape. An empty non-nil slice is a 0-d operand.
	AShape, BShape []int
	// Alpha scales b in Add and Sub. Zero means PyTorch's default of 1.
	Alpha float64
	// Weight is Lerp's scalar weight w (used as given, 0 included).
	Weight float64
}

// BinaryArgs are the operands of one Run. A and B are the forward inputs,
// required by every op except Add, Sub and Lerp (which ignore them). DA or DB
// may be left zero when that gradient is not wanted, but not both; the
// other is then neither computed nor stored. Outputs must not overlap any
// input except by being the identical tensor, and an output that sums
// over broadcast dims must not overlap any input at all. Workspace must
// hold WorkspaceSize() bytes, 16-byte aligned, when that is not 0; its
// contents need no initialization.
type BinaryArgs struct {
	DY, A, B  Tensor
	DA, DB    Tensor
	Workspace driver.Buffer
}

// BinaryBackward is a validated plan for one binary backward op. It is
// immutable and safe for concurrent use (concurrent Runs of a broadcasting
// plan need separate workspaces).
type BinaryBackward struct {
	id             planID
	desc           BinaryDesc
	shape          []int
	aShape, bShape []int // a's and b's shapes: shape without broadcasting
	scalar         float64
	kernel         *kernelRef // the elementwise kernel, or the tile or else the general bcast kernel
	genK           *kernelRef // the general bcast kernel (nil without broadcasting)
	bc             *bcastPlan // nil without broadcasting
}

const (
	modeStrided    = 0
	modeContiguous = 1
	modeVector     = 2
)

// NewBinaryBackward validates desc and returns a plan for it. The error
// wraps ErrUnsupported for an unknown op, ErrDType for an invalid dtype,
// ErrRank or ErrShape for a bad shape (an AShape or BShape that does not
// broadcast to Shape included) and ErrParam for an Alpha or Weight that is
// not finite. A plan whose AShape and BShape are nil or equal to Shape
// launches the binary family's elementwise kernel; any other takes the
// bcast family's (binary_bcast.go).
func NewBinaryBackward(desc BinaryDesc) (*BinaryBackward, error) {
	id := planID{plan: "BinaryBackward", op: desc.Op.String(), dt: desc.DType}
	if desc.Op < BinaryAdd || desc.Op > BinaryLerp {
		return nil, id.errorf(ErrUnsupported, "unknown binary op %d", uint8(desc.Op))
	}
	if err := id.checkDType(desc.DType); err != nil {
		return nil, err
	}
	if err := id.checkShape("shape", desc.Shape, 0); err != nil {
		return nil, err
	}
	shape := append([]int(nil), desc.Shape...)
	aShape, bShape := shape, shape
	if desc.AShape != nil {
		if err := id.checkBroadcast("AShape", desc.AShape, desc.Shape); err != nil {
			return nil, err
		}
		aShape = append([]int{}, desc.AShape...)
	}
	if desc.BShape != nil {
		if err := id.checkBroadcast("BShape", desc.BShape, desc.Shape); err != nil {
			return nil, err
		}
		bShape = append([]int{}, desc.BShape...)
	}
	broadcast := !shapeEqual(aShape, shape) || !shapeEqual(bShape, shape)
	scalar := desc.Alpha
	switch desc.Op {
	case BinaryAdd, BinarySub:
		if scalar == 0 {
			scalar = 1
		}
	case BinaryLerp:
		scalar = desc.Weight
	}
	if math.IsNaN(scalar) || math.IsInf(scalar, 0) {
		return nil, id.errorf(ErrParam, "scalar (alpha or weight) %v must be finite", scalar)
	}
	p := &BinaryBackward{id: id, desc: desc, shape: shape, aShape: aShape, bShape: bShape, scalar: scalar}
	p.desc.Shape = p.shape
	p.desc.AShape, p.desc.BShape = nil, nil
	if broadcast {
		p.desc.AShape, p.desc.BShape = aShape, bShape
		p.bc = newBcastPlan(desc.DType, shape, aShape, bShape)
		// The general kernel serves every pattern (and strided tensors of
		// a tile pattern); the tile kernel only tile patterns.
		gen, ok := lookupKernel("bcast", desc.Op.String(), desc.DType, "gen")
		tile, ok2 := lookupKernel("bcast", desc.Op.String(), desc.DType, "tile")
		if !ok || !ok2 {
			return nil, id.errorf(ErrUnsupported, "no broadcasting kernel for %s %s", desc.Op, desc.DType)
		}
		p.genK = newKernelRef("bcast", gen)
		p.kernel = p.genK
		if p.bc.tileOK {
			p.kernel = newKernelRef("bcast", tile)
		}
		return p, nil
	}
	name, ok := lookupKernel("binary", desc.Op.String(), desc.DType, "")
	if !ok {
		return nil, id.errorf(ErrUnsupported, "no kernel for %s %s", desc.Op, desc.DType)
	}
	p.kernel = newKernelRef("binary", name)
	return p, nil
}

// Kernel identifies the kernel the plan launches: a broadcasting plan's
// tile kernel where its shapes allow one (its general kernel serves
// strided tensors), else its general kernel.
func (p *BinaryBackward) Kernel() KernelInfo {
	family := "binary"
	if p.bc != nil {
		family = "bcast"
	}
	return KernelInfo{Name: p.kernel.name, Family: family, Op: p.id.op, DType: p.desc.DType, Backend: backend}
}

// Precision reports the plan's numerical guarantees: elementwise math in
// opmath, rounded once; a broadcasting plan's sums accumulate in opmath in
// a fixed order.
func (p *BinaryBackward) Precision() Precision { return precisionFor(p.desc.DType, p.bc != nil) }

// WorkspaceSize returns the bytes of scratch memory Run needs in
// BinaryArgs.Workspace: 0 without broadcasting; with it, room for the
// partial sums of gradients whose sums span several blocks (0 when
// none does).
func (p *BinaryBackward) WorkspaceSize() int64 {
	if p.bc == nil {
		return 0
	}
	return p.bc.wsBytes
}

// Broadcasting reports whether the plan has operands of their own shapes
// (AShape or BShape differ from Shape).
func (p *BinaryBackward) Broadcasting() bool { return p.bc != nil }

// Desc returns the plan's descriptor. AShape and BShape are nil without
// broadcasting and both set with it.
func (p *BinaryBackward) Desc() BinaryDesc {
	d := p.desc
	d.Shape = append([]int(nil), p.shape...)
	if p.bc != nil {
		d.AShape = append([]int{}, p.aShape...)
		d.BShape = append([]int{}, p.bShape...)
	}
	return d
}

// Check validates args against the plan without launching anything.
func (p *BinaryBackward) Check(a *BinaryArgs) error {
	dt, id := p.desc.DType, p.id
	if err := id.checkTensor("dy", &a.DY, roleInput, dt, p.shape); err != nil {
		return err
	}
	if p.desc.Op.needsSaved() {
		if err := id.checkTensor("a", &a.A, roleSaved, dt, p.aShape); err != nil {
			return err
		}
		if err := id.checkTensor("b", &a.B, roleSaved, dt, p.bShape); err != nil {
			return err
		}
	}
	if !a.DA.Present() && !a.DB.Present() {
		return id.errorf(ErrMissing, "neither da nor db is given; at least one output is required")
	}
	if a.DA.Present() {
		if err := id.checkTensor("da", &a.DA, roleOutput, dt, p.aShape); err != nil {
			return err
		}
	}
	if a.DB.Present() {
		if err := id.checkTensor("db", &a.DB, roleOutput, dt, p.bShape); err != nil {
			return err
		}
	}
	if ws := p.WorkspaceSize(); ws > 0 {
		w := a.Workspace
		if w.Addr == 0 {
			return id.errorf(ErrMissing, "workspace is required: WorkspaceSize() is %d bytes", ws)
		}
		if w.Size < ws {
			return id.errorf(ErrBufferTooSmall, "workspace needs %d bytes (WorkspaceSize) but has %d", ws, w.Size)
		}
		if w.Addr%16 != 0 {
			return id.errorf(ErrLayout, "workspace address %#x is not 16-byte aligned", uintptr(w.Addr))
		}
	}
	return nil
}

// Run checks args as Check does and queues the kernel on s. Run returns once
// the kernel is queued; da and db are written when s reaches it
// (Stream.Synchronize, or an event recorded after Run). The first Run in a
// context loads the kernel, which compiles its PTX unless the driver's JIT
// cache holds it; Warm does that ahead of time. Run never allocates device
// memory, copies from the host or synchronizes, and may be called
// concurrently. The error wraps ErrNilStream for a nil s, is one of
// Check's, or is the driver's error from loading or launching the kernel.
func (p *BinaryBackward) Run(s *driver.Stream, a *BinaryArgs) error {
	if s == nil {
		return p.id.errorf(ErrNilStream, "Run needs a stream")
	}
	if err := p.Check(a); err != nil {
		return err
	}
	if p.bc != nil {
		return p.runBroadcast(s, a)
	}
	if numel(p.shape) == 0 {
		return nil
	}
	lf, err := p.kernel.resolve(s.Context())
	if err != nil {
		return err
	}
	ts := [5]*Tensor{&a.DY, nil, nil, nil, nil}
	if p.desc.Op.needsSaved() {
		ts[1], ts[2] = &a.A, &a.B
	}
	if a.DA.Present() {
		ts[3] = &a.DA
	}
	if a.DB.Present() {
		ts[4] = &a.DB
	}
	v := collapse(p.shape, &ts)
	L := binaryLayout{n: v.n, rank: int32(v.rank), mode: modeStrided, dim: v.dim, stride: v.stride}
	work := v.n
	if v.contiguous(&ts) {
		L.mode = modeContiguous
		aligned := true
		for _, t := range ts {
			if t != nil && uintptr(t.Buf.Addr)%16 != 0 {
				aligned = false
			}
		}
		if aligned {
			L.mode = modeVector
			work = (v.n + int64(16/p.desc.DType.Size()) - 1) / int64(16/p.desc.DType.Size())
		}
	}
	args := driver.GetArgs()
	p.pack(args, &ts, &L)
	block := p.kernel.block
	err = lf.fn.Launch(s, [3]uint32{gridCover(work, block), 1, 1}, [3]uint32{uint32(block), 1, 1}, 0, args)
	driver.PutArgs(args)
	return err
}

// pack appends the kernel parameters in the order of the spec's binary ABI:
// dy, a, b, da, db (absent ones as null), scalar, layout.
func (p *BinaryBackward) pack(args *driver.Args, ts *[5]*Tensor, L *binaryLayout) {
	for _, t := range ts {
		if t != nil {
			args.Ptr(t.Buf.Addr)
		} else {
			args.Ptr(0)
		}
	}
	args.F64(p.scalar)
	// The layout is copied into the argument block; L does not escape.
	args.Bytes(unsafe.Pointer(L), unsafe.Sizeof(*L), 8)
}
