package ops

import (
	"errors"

	"github.com/baracuda-go/baracuda/driver"
)

// DeviceFacts are the facts about a GPU that a plan's launch policy reads:
// which kernels the device's module builds hold (by compute capability),
// how many multiprocessors it has, and how many blocks of a kernel with
// dynamic shared memory an SM holds. Run reads them from its stream's
// context (DeviceFactsOf); a test or a tool fills the exported fields by
// hand to ask Launches what a Run would do on another GPU.
//
// Facts filled by hand model a kernel's resident blocks per SM from the
// shared memory alone: the most of min(32, MaxThreadsPerSM/block) blocks
// whose dynamic shared memory, plus 1 KiB reserved by the system per
// block, fit in SharedMemPerBlockOptin + 1 KiB, none where a block's
// dynamic shared memory is above SharedMemPerBlockOptin (or above the
// kernel's opt-in cap). The model ignores registers and the kernel's static
// shared memory, which only the driver knows; facts from DeviceFactsOf
// take the driver's figures instead.
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
	return DeviceFacts{Major: major, Minor: minor, SMs: sms, MaxThreadsPerSM: threads,
		SharedMemPerBlockOptin: optin, ctx: ctx}
}

// kernelFacts are one kernel's facts on a device: whether its builds hold
// it (built; a variant for newer GPUs may be missing), the device's
// multiprocessors, and the blocks per SM of its launches with the
// kernelRef's dynamic shared memory (0 where it has none, or where that
// does not fit the device).
type kernelFacts struct {
	built       bool
	sms         int
	blocksPerSM int
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
		return kernelFacts{built: true, sms: lf.sms, blocksPerSM: lf.smemBlocksPerSM}, nil
	}
	if err := driver.CheckComputeCapability(d.Major, d.Minor, MinComputeMajor, MinComputeMinor); err != nil {
		return kernelFacts{}, err
	}
	if moduleFor(k.row, d.Major, knob(basePTXEnv) != "") == "" {
		return kernelFacts{}, nil
	}
	return kernelFacts{built: true, sms: d.SMs, blocksPerSM: d.modelBlocks(k.block, k.smem, k.smemCap)}, nil
}

// modelBlocks is DeviceFacts's model of the resident blocks per SM of a
// kernel of block threads with smem bytes of dynamic shared memory and
// opt-in cap smemCap (0: maxDynSmem), as loadFunction sets it up.
func (d *DeviceFacts) modelBlocks(block, smem, smemCap int) int {
	if smem == 0 || block < 1 {
		return 0
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
// or a memset of the start of the workspace.
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
	// Memset, for a memset, is the number of bytes at the start of the
	// workspace it sets to 0xff.
	Memset int64
}
