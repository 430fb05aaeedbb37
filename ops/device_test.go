package ops

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
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

// checkPolicyDevs checks that launches(dev, a) is each device's want in
// devs (a policy table's row; plan names the row and its descriptor).
func checkPolicyDevs[A any](t *testing.T, plan string, launches func(DeviceFacts, *A) ([]LaunchInfo, error), a *A, devs []policyDev) {
	t.Helper()
	for _, d := range devs {
		ls, err := launches(d.facts, a)
		if err != nil {
			t.Errorf("%s on %d.%d, %d SMs: %v", plan, d.facts.Major, d.facts.Minor, d.facts.SMs, err)
			continue
		}
		if got := launchString(ls); got != d.want {
			t.Errorf("%s on %d.%d, %d SMs:\n got %s\nwant %s", plan, d.facts.Major, d.facts.Minor, d.facts.SMs, got, d.want)
		}
	}
}

// checkLaunchesEdges checks what every family's Launches does at its
// edges: a plan of an empty tensor launches nothing; facts below compute
// capability 7.0 are driver.ErrUnsupportedDevice, as loading a kernel
// there is; operands whose dx is too short (Check's error) are
// ErrBufferTooSmall.
func checkLaunchesEdges[A any](t *testing.T, empty, plan func(DeviceFacts, *A) ([]LaunchInfo, error), shortDX *A) {
	t.Helper()
	if ls, err := empty(factsH100, nil); ls != nil || err != nil {
		t.Errorf("empty tensor: %v, %v", ls, err)
	}
	old := factsV100
	old.Major, old.Minor = 6, 1
	if _, err := plan(old, nil); !errors.Is(err, driver.ErrUnsupportedDevice) {
		t.Errorf("compute capability 6.1: %v, want ErrUnsupportedDevice", err)
	}
	if _, err := plan(factsH100, shortDX); !errors.Is(err, ErrBufferTooSmall) {
		t.Errorf("short dx: %v, want ErrBufferTooSmall", err)
	}
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
