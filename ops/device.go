package ops

import (
	"errors"

	"github.com/baracuda-go/baracuda/driver"
)

// DeviceFacts are the facts about a GPU that a plan's launch policy reads:
// which kernels the device's module builds hold (by compute capability),
// how many multiprocessors it has, its L2 cache, and how many blocks of a
// kernel an SM holds. Run reads them from its stream's context
// (DeviceFactsOf); a test or a tool fills the exported fields by hand to
// ask Launches what a Run would do on another GPU.
//
// Facts filled by hand model a kernel's resident blocks per SM from its
// threads and shared memory alone: min(32, MaxThreadsPerSM/block) blocks,
// and with dynamic shared memory no more than fit in
// SharedMemPerBlockOptin + 1 KiB with 1 KiB reserved by the system per
// block, none where a block's dynamic shared memory is above
// SharedMemPerBlockOptin (or above the kernel's opt-in cap). The model
// ignores registers and the kernel's static shared memory, which only the
// driver knows, so a grid capped at the resident blocks may be larger
// than on the GPU; facts from DeviceFactsOf take the driver's figures.
type DeviceFacts struct {
	// Major and Minor are the compute capability, e.g. 9 and 0 for an
	// H100.
	Major, Minor int
	// SMs is the number of multiprocessors (132 on an H100 SXM).
	SMs int
	// MaxThreadsPerSM is the most threads an SM holds resident (2048 on
	// compute capability 7.0, 8.0 and 9.0).
	MaxThreadsPerSM int
	// SharedMemPerBlockOptin is the most shared memory in bytes a block
	// may use once its function opts in (232448 on an H100, 98304 on a
	// V100).
	SharedMemPerBlockOptin int
	// L2Cache is the L2 cache's size in bytes (50 MiB on an H100 SXM).
	L2Cache int

	// ctx, set by DeviceFactsOf, is the context whose kernels give each
	// kernel's facts (kernelFacts): a kernel is loaded there when the
	// policy first asks about it.
	ctx *driver.Context
}

// DeviceFactsOf returns the facts of ctx's device, read from the
// attributes the driver package caches (no driver call). With these facts
// a policy asks the context about a kernel by loading it there, which
// JIT-compiles it on its first use, as a Run does when it considers that
// kernel.
func DeviceFactsOf(ctx *driver.Context) DeviceFacts {
	d := ctx.Device()
	major, minor, _ := d.ComputeCapability()
	sms, _ := d.SMCount()
	threads, _ := d.MaxThreadsPerSM()
	optin, _ := d.MaxSharedMemPerBlockOptin()
	l2, _ := d.L2CacheSize()
	return DeviceFacts{Major: major, Minor: minor, SMs: sms, MaxThreadsPerSM: threads,
		SharedMemPerBlockOptin: optin, L2Cache: l2, ctx: ctx}
}

// kernelFacts are one kernel's facts on a device: whether its builds hold
// it (built; a variant for newer GPUs may be missing), the device's
// multiprocessors, its resident blocks per SM without dynamic shared
// memory (blocks, at least 1) and with the kernelRef's (smemBlocks: 0
// where it has none, or where that does not fit the device).
type kernelFacts struct {
	built      bool
	sms        int
	blocks     int
	smemBlocks int
}

// kernel returns k's facts on the device. From a context they are the
// loaded function's (loading it on first use); an error is the driver's
// from loading it. Filled by hand they are modelled (see DeviceFacts).
func (d *DeviceFacts) kernel(k *kernelRef) (kernelFacts, error) {
	if d.ctx != nil {
		lf, err := k.resolve(d.ctx)
		switch {
		case errors.Is(err, errNoBuild):
			return kernelFacts{}, nil
		case err != nil:
			return kernelFacts{}, err
		}
		return kernelFacts{built: true, sms: lf.sms, blocks: lf.blocksPerSM, smemBlocks: lf.smemBlocksPerSM}, nil
	}
	if err := driver.CheckComputeCapability(d.Major, d.Minor, MinComputeMajor, MinComputeMinor); err != nil {
		return kernelFacts{}, err
	}
	if moduleFor(k.row, d.Major, knob(basePTXEnv) != "") == "" {
		return kernelFacts{}, nil
	}
	kf := kernelFacts{built: true, sms: d.SMs, blocks: max(d.modelBlocks(k.block, 0, 0), 1)}
	if k.smem > 0 {
		kf.smemBlocks = d.modelBlocks(k.block, k.smem, k.smemCap)
	}
	return kf, nil
}

// need is kernel for a kernel the policy launches wherever it reads its
// facts: one the builds do not hold is errNoBuild, as its load is.
func (d *DeviceFacts) need(k *kernelRef) (kernelFacts, error) {
	kf, err := d.kernel(k)
	if err == nil && !kf.built {
		err = errNoBuild
	}
	return kf, err
}

// preload loads, from a context, those of refs not loaded there yet, each
// on its own goroutine (see preload): the kernels a policy may read next,
// so that a first Run waits for the longest compile rather than their sum.
// Facts filled by hand load nothing.
func (d *DeviceFacts) preload(refs ...*kernelRef) {
	if d.ctx != nil {
		preload(d.ctx, refs...)
	}
}

// modelBlocks is DeviceFacts's model of the resident blocks per SM of a
// kernel of block threads with smem bytes of dynamic shared memory and
// opt-in cap smemCap (0: maxDynSmem), as loadFunction sets it up; with
// smem 0 the blocks without dynamic shared memory.
func (d *DeviceFacts) modelBlocks(block, smem, smemCap int) int {
	if block < 1 {
		return 0
	}
	if smem == 0 {
		return min(32, d.MaxThreadsPerSM/block)
	}
	if smemCap == 0 {
		smemCap = maxDynSmem
	}
	if smem > d.SharedMemPerBlockOptin || (smem > 48<<10 && smem > smemCap) {
		return 0
	}
	const reserved = 1 << 10
	return min(32, d.MaxThreadsPerSM/block, (d.SharedMemPerBlockOptin+reserved)/(smem+reserved))
}

// LaunchInfo is one step of a Run, as Launches reports it: a kernel launch,
// or a memset of part of the workspace.
type LaunchInfo struct {
	// Kernel is the launched kernel's name (KernelInfo.Name); empty for a
	// memset.
	Kernel string
	// Grid is the launch's blocks (along x), Block its threads per block
	// and SharedMem its dynamic shared memory in bytes.
	Grid      int64
	Block     int
	SharedMem int
	// Phase is the pass of a multi-pass kernel that the launch runs (the
	// layout's phase field; scan: 0 the main pass, 1 and 2 the
	// forward-state passes over tiles and their prefixes, 4 the f64 fix
	// pass).
	Phase int
	// Reverse: the launch walks its tiles last to first (the layout's
	// reverse field: reduce's apply pass after its statistics).
	Reverse bool
	// Memset, for a memset, is the number of bytes of the workspace it
	// sets, from MemsetOffset on, to MemsetByte.
	Memset       int64
	MemsetOffset int64
	MemsetByte   byte
}
