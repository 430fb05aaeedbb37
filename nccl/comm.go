package nccl

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/baracuda-go/baracuda/driver"
)

// Comm is one rank of an NCCL communicator (ncclComm_t), bound to the
// device context it was created on. Its collectives queue work on streams
// of that context. NCCL allows one thread at a time to use a
// communicator: calls on one Comm must not run concurrently, and Destroy
// and Abort must not race with other use.
type Comm struct {
	handle uintptr // ncclComm_t
	ctx    *driver.Context
	rank   int
	count  int
	device int
}

// InitRank joins rank rank of an nranks-rank communicator on ctx's device
// (ncclCommInitRank). Every rank calls it with the same id, from its own
// process, or goroutine; it returns once all nranks have joined. Within one
// goroutine several ranks can only join inside GroupStart/GroupEnd, where
// NCCL does the joining at GroupEnd; InitAll is the simpler way to make a
// communicator over several GPUs of one process.
//
// NCCL's ncclCommInitRank takes the 128-byte id by value, which a call
// without cgo cannot pass on amd64 (purego places at most 72 bytes of
// arguments on the stack). There InitRank calls ncclCommInitRankScalable
// (NCCL 2.23 and newer), which takes the id by address, and an older
// NCCL gives an error matching ErrVersion. On arm64 the C ABI passes such
// a struct by address, and every supported NCCL works.
func InitRank(ctx *driver.Context, nranks, rank int, id UniqueID) (*Comm, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, argErrorf("InitRank", 0, ErrContext, "ctx is nil")
	}
	if nranks < 1 {
		return nil, argErrorf("InitRank", 0, ErrCount, "nranks %d: a communicator has at least one rank", nranks)
	}
	if rank < 0 || rank >= nranks {
		return nil, argErrorf("InitRank", 0, ErrRank, "rank %d is outside 0..%d (nranks %d)", rank, nranks-1, nranks)
	}
	useScalable := ncclCommInitRankScalable.addr != 0 && version >= scalableVersion
	if !useScalable && runtime.GOARCH != "arm64" {
		return nil, fmt.Errorf("nccl: InitRank on %s needs NCCL %s or newer (ncclCommInitRankScalable; %s is %s): %w",
			runtime.GOARCH, FormatVersion(scalableVersion), libraryPath, FormatVersion(version), ErrVersion)
	}
	b, err := ctx.Bind()
	if err != nil {
		return nil, err
	}
	defer b.Release()
	h := new(uintptr)
	idCopy := new(UniqueID)
	*idCopy = id
	var r Result
	if useScalable {
		// One id (nId 1) and the default configuration (config NULL).
		r = ncclCommInitRankScalable.call(uintptr(unsafe.Pointer(h)), uintptr(nranks), uintptr(rank), 1,
			uintptr(unsafe.Pointer(idCopy)), 0)
	} else {
		// arm64: a struct over 16 bytes is passed as the address of a
		// copy the caller owns; idCopy is that copy.
		r = ncclCommInitRank.call(uintptr(unsafe.Pointer(h)), uintptr(nranks), uintptr(unsafe.Pointer(idCopy)), uintptr(rank))
	}
	if r != Success {
		return nil, callError(fmt.Sprintf("ncclCommInitRank(nranks %d, rank %d, device %d)", nranks, rank, ctx.Device().Ordinal()), r, 0)
	}
	return newComm(*h, ctx)
}

// InitAll makes a communicator over the GPUs of this process with the
// given device ordinals, one Comm per device, rank i on ordinals[i]
// (ncclCommInitAll). nil or empty ordinals means every visible GPU. Each
// Comm works on its device's primary context (driver.Device.Context).
func InitAll(ordinals []int) ([]*Comm, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if len(ordinals) == 0 {
		n, err := driver.DeviceCount()
		if err != nil {
			return nil, err
		}
		for i := 0; i < n; i++ {
			ordinals = append(ordinals, i)
		}
		if n == 0 {
			return nil, argErrorf("InitAll", 0, ErrContext, "no GPU is visible")
		}
	}
	devs := make([]int32, len(ordinals))
	ctxs := make([]*driver.Context, len(ordinals))
	for i, o := range ordinals {
		for j := 0; j < i; j++ {
			if ordinals[j] == o {
				return nil, argErrorf("InitAll", 0, ErrContext, "device %d appears twice in %v; NCCL takes each GPU once", o, ordinals)
			}
		}
		dev, err := driver.GetDevice(o)
		if err != nil {
			return nil, err
		}
		ctx, err := dev.Context()
		if err != nil {
			return nil, err
		}
		devs[i] = int32(o)
		ctxs[i] = ctx
	}
	// NCCL switches devices while it initializes; binding keeps the
	// goroutine on one thread and gives the thread its context back.
	b, err := ctxs[0].Bind()
	if err != nil {
		return nil, err
	}
	handles := make([]uintptr, len(ordinals))
	r := ncclCommInitAll.call(uintptr(unsafe.Pointer(&handles[0])), uintptr(len(ordinals)), uintptr(unsafe.Pointer(&devs[0])))
	b.Release()
	if r != Success {
		return nil, callError(fmt.Sprintf("ncclCommInitAll(devices %v)", ordinals), r, 0)
	}
	comms := make([]*Comm, len(ordinals))
	for i, h := range handles {
		c, err := newComm(h, ctxs[i])
		if err != nil {
			for _, d := range comms[:i] {
				_ = d.Destroy()
			}
			for j := i; j < len(handles); j++ {
				_ = (&Comm{handle: handles[j], ctx: ctxs[j]}).Destroy()
			}
			return nil, err
		}
		comms[i] = c
	}
	return comms, nil
}

// newComm wraps handle and reads its rank, size and device once.
func newComm(handle uintptr, ctx *driver.Context) (*Comm, error) {
	c := &Comm{handle: handle, ctx: ctx}
	for _, q := range []struct {
		sym *symbol
		dst *int
	}{{&ncclCommUserRank, &c.rank}, {&ncclCommCount, &c.count}, {&ncclCommCuDevice, &c.device}} {
		v, r := q.sym.out(handle)
		if r != Success {
			return nil, callError(q.sym.name, r, handle)
		}
		*q.dst = int(int32(v))
	}
	return c, nil
}

// Rank returns the communicator rank of c, 0..Count()-1.
func (c *Comm) Rank() int { return c.rank }

// Count returns the number of ranks of the communicator.
func (c *Comm) Count() int { return c.count }

// Device returns the CUDA device ordinal c works on.
func (c *Comm) Device() int { return c.device }

// Context returns the device context c was created on; the streams its
// collectives take belong to it.
func (c *Comm) Context() *driver.Context { return c.ctx }

// Handle returns the ncclComm_t, for passing to other code that calls
// NCCL; 0 after Destroy or Abort.
func (c *Comm) Handle() uintptr { return c.handle }

// AsyncError reports an error NCCL met while running c's queued work, such
// as a peer that went away or a network failure (ncclCommGetAsyncError):
// nil while all is well. A collective that never finishes on the device is
// found this way; after such an error the communicator is unusable and
// Abort releases it.
func (c *Comm) AsyncError() error {
	if c.handle == 0 {
		return argErrorf("AsyncError", 0, ErrDestroyed, "the communicator was destroyed")
	}
	v, r := ncclCommGetAsyncError.out(c.handle)
	if r != Success {
		return callError("ncclCommGetAsyncError", r, c.handle)
	}
	if async := Result(int32(v)); async != Success && async != InProgress {
		return &Error{Op: fmt.Sprintf("asynchronous error of rank %d of %d (device %d)", c.rank, c.count, c.device),
			Code: async, Detail: lastError(c.handle)}
	}
	return nil
}

// Destroy waits for c's queued work to finish and frees the communicator
// (ncclCommDestroy). Destroying a destroyed Comm does nothing.
func (c *Comm) Destroy() error {
	return c.release(&ncclCommDestroy)
}

// Abort frees the communicator at once, stopping its queued and running
// work (ncclCommAbort): the way out after AsyncError reports a failure, or
// when a peer is gone. Aborting a destroyed Comm does nothing.
func (c *Comm) Abort() error {
	return c.release(&ncclCommAbort)
}

func (c *Comm) release(sym *symbol) error {
	if c.handle == 0 {
		return nil
	}
	b, err := c.ctx.Bind()
	if err != nil {
		return err
	}
	r := sym.do(c.handle)
	b.Release()
	if r != Success {
		return callError(fmt.Sprintf("%s(rank %d, device %d)", sym.name, c.rank, c.device), r, 0)
	}
	c.handle = 0
	return nil
}
