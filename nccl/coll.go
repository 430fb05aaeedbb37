package nccl

import (
	"fmt"
	"math"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// Op is a reduction (ncclRedOp_t).
type Op int32

// The reductions NCCL provides for every element type.
const (
	Sum  Op = 0 // ncclSum
	Prod Op = 1 // ncclProd
	Max  Op = 2 // ncclMax
	Min  Op = 3 // ncclMin
	Avg  Op = 4 // ncclAvg: the sum divided by the number of ranks
)

// Ops lists the reductions, for iterating in tests and tools.
var Ops = []Op{Sum, Prod, Max, Min, Avg}

var opNames = [...]string{Sum: "sum", Prod: "prod", Max: "max", Min: "min", Avg: "avg"}

// String returns "sum", "prod", "max", "min" or "avg".
func (o Op) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", int32(o))
}

// ncclDataType_t values of the element types the collectives take.
const (
	ncclFloat16  = 6
	ncclFloat32  = 7
	ncclFloat64  = 8
	ncclBfloat16 = 9
)

// ncclType maps a dtype to its ncclDataType_t; ok is false for the types
// the collectives do not take.
func ncclType(dt dtype.DType) (t uintptr, ok bool) {
	switch dt {
	case dtype.F32:
		return ncclFloat32, true
	case dtype.F16:
		return ncclFloat16, true
	case dtype.BF16:
		return ncclBfloat16, true
	case dtype.F64:
		return ncclFloat64, true
	}
	return 0, false
}

// AllReduce reduces count elements of send over all ranks with op and
// leaves the result in recv on every rank (ncclAllReduce). send and recv
// may be the same buffer (in place), but must not otherwise overlap.
func (c *Comm) AllReduce(send, recv driver.Buffer, count int, dt dtype.DType, op Op, s *driver.Stream) error {
	const call = "AllReduce"
	t, err := c.check(call, dt, op, true, count)
	if err != nil {
		return err
	}
	n := int64(count)
	if err := checkBuffer(call, dt, "send", send, n); err != nil {
		return err
	}
	if err := checkBuffer(call, dt, "recv", recv, n); err != nil {
		return err
	}
	if err := checkOverlap(call, dt, send, n, recv, n, 0); err != nil {
		return err
	}
	if err := c.checkStream(call, dt, s); err != nil {
		return err
	}
	if count == 0 {
		return nil
	}
	return c.enqueue(&ncclAllReduce, dt, op, count, -1,
		uintptr(send.Addr), uintptr(recv.Addr), uintptr(count), t, uintptr(op), c.handle, s.Handle())
}

// Broadcast copies count elements of root's send into recv on every rank
// (ncclBroadcast). send is read on root only; other ranks may pass the
// zero Buffer. send and recv may be the same buffer (in place).
func (c *Comm) Broadcast(send, recv driver.Buffer, count int, dt dtype.DType, root int, s *driver.Stream) error {
	const call = "Broadcast"
	t, err := c.check(call, dt, Sum, false, count)
	if err != nil {
		return err
	}
	if err := c.checkRoot(call, dt, root); err != nil {
		return err
	}
	n := int64(count)
	if c.rank == root {
		if err := checkBuffer(call, dt, "send", send, n); err != nil {
			return err
		}
		if err := checkOverlap(call, dt, send, n, recv, n, 0); err != nil {
			return err
		}
	}
	if err := checkBuffer(call, dt, "recv", recv, n); err != nil {
		return err
	}
	if err := c.checkStream(call, dt, s); err != nil {
		return err
	}
	if count == 0 {
		return nil
	}
	return c.enqueue(&ncclBroadcast, dt, -1, count, root,
		uintptr(send.Addr), uintptr(recv.Addr), uintptr(count), t, uintptr(root), c.handle, s.Handle())
}

// Reduce reduces count elements of send over all ranks with op into recv
// on root (ncclReduce). recv is written on root only; other ranks may pass
// the zero Buffer. send and recv may be the same buffer (in place).
func (c *Comm) Reduce(send, recv driver.Buffer, count int, dt dtype.DType, op Op, root int, s *driver.Stream) error {
	const call = "Reduce"
	t, err := c.check(call, dt, op, true, count)
	if err != nil {
		return err
	}
	if err := c.checkRoot(call, dt, root); err != nil {
		return err
	}
	n := int64(count)
	if err := checkBuffer(call, dt, "send", send, n); err != nil {
		return err
	}
	if c.rank == root {
		if err := checkBuffer(call, dt, "recv", recv, n); err != nil {
			return err
		}
		if err := checkOverlap(call, dt, send, n, recv, n, 0); err != nil {
			return err
		}
	}
	if err := c.checkStream(call, dt, s); err != nil {
		return err
	}
	if count == 0 {
		return nil
	}
	return c.enqueue(&ncclReduce, dt, op, count, root,
		uintptr(send.Addr), uintptr(recv.Addr), uintptr(count), t, uintptr(op), uintptr(root), c.handle, s.Handle())
}

// AllGather gathers sendCount elements of send from every rank into recv
// on every rank, rank i's at element i*sendCount (ncclAllGather): recv
// holds Count()*sendCount elements. In place, send is the rank's own part
// of recv (recv.Slice(Rank()*sendCount*size, sendCount*size)).
func (c *Comm) AllGather(send, recv driver.Buffer, sendCount int, dt dtype.DType, s *driver.Stream) error {
	const call = "AllGather"
	t, err := c.check(call, dt, Sum, false, sendCount)
	if err != nil {
		return err
	}
	if err := c.checkBlocks(call, dt, "sendCount", int64(sendCount), send, recv, false, s); err != nil {
		return err
	}
	if sendCount == 0 {
		return nil
	}
	return c.enqueue(&ncclAllGather, dt, -1, sendCount, -1,
		uintptr(send.Addr), uintptr(recv.Addr), uintptr(sendCount), t, c.handle, s.Handle())
}

// ReduceScatter reduces Count()*recvCount elements of send over all ranks
// with op and leaves block i of the result, recvCount elements from
// element i*recvCount, in recv on rank i (ncclReduceScatter). In place,
// recv is the rank's own block of send
// (send.Slice(Rank()*recvCount*size, recvCount*size)).
func (c *Comm) ReduceScatter(send, recv driver.Buffer, recvCount int, dt dtype.DType, op Op, s *driver.Stream) error {
	const call = "ReduceScatter"
	t, err := c.check(call, dt, op, true, recvCount)
	if err != nil {
		return err
	}
	if err := c.checkBlocks(call, dt, "recvCount", int64(recvCount), send, recv, true, s); err != nil {
		return err
	}
	if recvCount == 0 {
		return nil
	}
	return c.enqueue(&ncclReduceScatter, dt, op, recvCount, -1,
		uintptr(send.Addr), uintptr(recv.Addr), uintptr(recvCount), t, uintptr(op), c.handle, s.Handle())
}

// checkBlocks validates the buffers and stream of AllGather and
// ReduceScatter, whose one buffer holds Count() blocks of n elements and
// whose other buffer one block: recv is the whole for AllGather, send for
// ReduceScatter (sendWhole). In place, the single block is the whole's
// block at Rank()*n. countName names n in errors.
func (c *Comm) checkBlocks(call string, dt dtype.DType, countName string, n int64, send, recv driver.Buffer, sendWhole bool, s *driver.Stream) error {
	total, err := c.total(call, dt, countName, n)
	if err != nil {
		return err
	}
	whole, block := recv, send
	sendN, recvN := n, total
	if sendWhole {
		whole, block = send, recv
		sendN, recvN = total, n
	}
	if err := checkBuffer(call, dt, "send", send, sendN); err != nil {
		return err
	}
	if err := checkBuffer(call, dt, "recv", recv, recvN); err != nil {
		return err
	}
	if err := checkOverlap(call, dt, whole, total, block, n, int64(c.rank)*n); err != nil {
		return err
	}
	return c.checkStream(call, dt, s)
}

// check validates what every collective takes: a live communicator, the
// element type, the reduction (where reduces is set) and the count. It
// returns the ncclDataType_t.
func (c *Comm) check(call string, dt dtype.DType, op Op, reduces bool, count int) (uintptr, error) {
	if c == nil || c.handle == 0 {
		return 0, argErrorf(call, dt, ErrDestroyed, "the communicator is nil or was destroyed")
	}
	t, ok := ncclType(dt)
	if !ok {
		return 0, argErrorf(call, dt, ErrDType, "dtype %v: the collectives take f32, f16, bf16 and f64", dt)
	}
	if reduces && (op < Sum || op > Avg) {
		return 0, argErrorf(call, dt, ErrOp, "op %v: the reductions are sum, prod, max, min and avg", op)
	}
	if count < 0 {
		return 0, argErrorf(call, dt, ErrCount, "count %d is negative", count)
	}
	if int64(count) > math.MaxInt64/int64(dt.Size()) {
		return 0, argErrorf(call, dt, ErrCount, "count %d elements of %d bytes overflows a byte count", count, dt.Size())
	}
	return t, nil
}

// checkStream checks that s is a live stream of c's context.
func (c *Comm) checkStream(call string, dt dtype.DType, s *driver.Stream) error {
	if s == nil {
		return argErrorf(call, dt, ErrStream, "stream is nil")
	}
	if s.Handle() == 0 {
		return argErrorf(call, dt, ErrStream, "stream was destroyed")
	}
	if s.Context() != c.ctx {
		return argErrorf(call, dt, ErrStream, "stream belongs to device %d's context; rank %d works on device %d",
			ordinal(s.Context()), c.rank, ordinal(c.ctx))
	}
	return nil
}

// ordinal returns ctx's device ordinal, -1 for a context without one.
func ordinal(ctx *driver.Context) int {
	if ctx == nil || ctx.Device() == nil {
		return -1
	}
	return ctx.Device().Ordinal()
}

func (c *Comm) checkRoot(call string, dt dtype.DType, root int) error {
	if root < 0 || root >= c.count {
		return argErrorf(call, dt, ErrRank, "root %d is outside 0..%d (%d ranks)", root, c.count-1, c.count)
	}
	return nil
}

// total returns Count()*n elements, the size of the gathered or scattered
// whole, checking that its bytes fit an int64.
func (c *Comm) total(call string, dt dtype.DType, field string, n int64) (int64, error) {
	if n > math.MaxInt64/int64(dt.Size())/int64(c.count) {
		return 0, argErrorf(call, dt, ErrCount, "%s %d times %d ranks overflows a byte count", field, n, c.count)
	}
	return n * int64(c.count), nil
}

// checkBuffer checks that b holds n elements of dt.
func checkBuffer(call string, dt dtype.DType, field string, b driver.Buffer, n int64) error {
	if n == 0 {
		return nil
	}
	if b.Addr == 0 {
		return argErrorf(call, dt, ErrNilBuffer, "%s has address 0 (%d %s elements needed)", field, n, dt)
	}
	if need := n * int64(dt.Size()); b.Size < need {
		return argErrorf(call, dt, ErrBufferTooSmall, "%s needs %d bytes (%d %s elements) but its buffer has %d",
			field, need, n, dt, b.Size)
	}
	return nil
}

// checkOverlap refuses partial overlaps of a whole (na elements at a) and
// a part (nb elements at b): the part may lie apart from the whole, or
// exactly at element off of it, NCCL's in-place layout.
func checkOverlap(call string, dt dtype.DType, a driver.Buffer, na int64, b driver.Buffer, nb int64, off int64) error {
	size := int64(dt.Size())
	aLo, aHi := int64(a.Addr), int64(a.Addr)+na*size
	bLo, bHi := int64(b.Addr), int64(b.Addr)+nb*size
	if na == 0 || nb == 0 || bHi <= aLo || aHi <= bLo || bLo == aLo+off*size {
		return nil
	}
	if off == 0 {
		return argErrorf(call, dt, ErrOverlap, "send [%#x, %#x) and recv [%#x, %#x) overlap without being the same buffer",
			uint64(a.Addr), uint64(aHi), uint64(b.Addr), uint64(bHi))
	}
	return argErrorf(call, dt, ErrOverlap, "[%#x, %#x) overlaps [%#x, %#x) but in place it must start at element %d of it (byte %#x)",
		uint64(b.Addr), uint64(bHi), uint64(a.Addr), uint64(aHi), off, uint64(aLo+off*size))
}

// enqueue binds c's context on this thread and calls sym with args. It does
// not allocate unless the call fails.
func (c *Comm) enqueue(sym *symbol, dt dtype.DType, op Op, count, root int, args ...uintptr) error {
	b, err := c.ctx.Bind()
	if err != nil {
		return err
	}
	r := sym.do(args...)
	b.Release()
	if r != Success {
		return c.collError(sym.name, dt, op, count, root, r)
	}
	return nil
}

//go:noinline
func (c *Comm) collError(name string, dt dtype.DType, op Op, count, root int, r Result) error {
	desc := fmt.Sprintf("%s(%s", name, dt)
	if op >= 0 {
		desc += ", " + op.String()
	}
	desc += fmt.Sprintf(", count %d", count)
	if root >= 0 {
		desc += fmt.Sprintf(", root %d", root)
	}
	desc += fmt.Sprintf(", rank %d of %d, device %d)", c.rank, c.count, c.device)
	return callError(desc, r, c.handle)
}
