package ops

import (
	"fmt"
	"strings"
)

// Devices as DeviceFacts model them, for the policy tests: a V100 (no
// compute_80 builds), a T4 (64 KiB of shared memory a block, 1024 threads
// an SM), an A100, an H100 SXM and an H100 PCIe (fewer SMs).
var (
	factsV100     = DeviceFacts{Major: 7, Minor: 0, SMs: 80, MaxThreadsPerSM: 2048, SharedMemPerBlockOptin: 96 << 10, L2Cache: 6 << 20}
	factsT4       = DeviceFacts{Major: 7, Minor: 5, SMs: 40, MaxThreadsPerSM: 1024, SharedMemPerBlockOptin: 64 << 10, L2Cache: 4 << 20}
	factsA100     = DeviceFacts{Major: 8, Minor: 0, SMs: 108, MaxThreadsPerSM: 2048, SharedMemPerBlockOptin: 163 << 10, L2Cache: 40 << 20}
	factsH100     = DeviceFacts{Major: 9, Minor: 0, SMs: 132, MaxThreadsPerSM: 2048, SharedMemPerBlockOptin: 227 << 10, L2Cache: 50 << 20}
	factsH100PCIe = DeviceFacts{Major: 9, Minor: 0, SMs: 114, MaxThreadsPerSM: 2048, SharedMemPerBlockOptin: 227 << 10, L2Cache: 50 << 20}
)

// policyDev is a device of a policy test and the launches expected on it.
type policyDev struct {
	facts DeviceFacts
	want  string // launchString of the launches
}

// onV100A100H100 expects launches want on a V100, an A100 and an H100.
func onV100A100H100(want string) []policyDev {
	return []policyDev{{factsV100, want}, {factsA100, want}, {factsH100, want}}
}

// launchString spells launches compactly: a memset as "memset<bytes>",
// "@<offset>" where not 0 and "=<byte in hex>"; a launch as the kernel
// without its family prefix ("scan_bw_", "reduce_bw_"), "/p<phase>" where
// not 0, "/rev" for a reverse walk, then grid x block and "+<shared
// memory>" where not 0.
func launchString(ls []LaunchInfo) string {
	var b strings.Builder
	for i, l := range ls {
		if i > 0 {
			b.WriteString(", ")
		}
		if l.Kernel == "" {
			fmt.Fprintf(&b, "memset%d", l.Memset)
			if l.MemsetOffset != 0 {
				fmt.Fprintf(&b, "@%d", l.MemsetOffset)
			}
			fmt.Fprintf(&b, "=%x", l.MemsetByte)
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(l.Kernel, "scan_bw_"), "reduce_bw_")
		b.WriteString(name)
		if l.Phase != 0 {
			fmt.Fprintf(&b, "/p%d", l.Phase)
		}
		if l.Reverse {
			b.WriteString("/rev")
		}
		fmt.Fprintf(&b, " %dx%d", l.Grid, l.Block)
		if l.SharedMem != 0 {
			fmt.Fprintf(&b, "+%d", l.SharedMem)
		}
	}
	return b.String()
}
