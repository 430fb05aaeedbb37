//go:build cuda

package ops

import (
	"regexp"
	"testing"
)

// TestLaunchesOnDevice: on the test's GPU, Launches with the context's
// facts (the driver's builds and occupancy, kernels loaded as a Run loads
// them) takes the same kernels, passes and memsets as Launches with the
// same facts filled by hand (modelled), for the scan and reduce decision
// tables' plans. Grids capped at the resident blocks may differ, since the
// model ignores registers: the test logs those.
func TestLaunchesOnDevice(t *testing.T) {
	ctx := deviceContext(t)
	dev := DeviceFactsOf(ctx)
	model := dev
	model.ctx = nil
	t.Logf("device facts: %+v", model)
	grids := regexp.MustCompile(` [0-9]+x[0-9]+(\+[0-9]+)?`)
	check := func(name string, launches func(DeviceFacts) ([]LaunchInfo, error)) {
		t.Helper()
		got, err := launches(dev)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		modelled, err := launches(model)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		g, m := launchString(got), launchString(modelled)
		switch {
		case grids.ReplaceAllString(g, "") != grids.ReplaceAllString(m, ""):
			t.Errorf("%s: the device's launches differ from the model's:\n device %s\n  model %s", name, g, m)
		case g != m:
			t.Logf("%s: the device's grids differ from the model's:\n device %s\n  model %s", name, g, m)
		}
	}
	for _, c := range scanPolicyCases {
		p, err := NewScanBackward(c.desc)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a := c.args(p)
		check("scan: "+c.name, func(d DeviceFacts) ([]LaunchInfo, error) { return p.Launches(d, a) })
	}
	for _, c := range reducePolicyCases {
		p, err := NewReduceBackward(c.desc)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a := c.args(p)
		check("reduce: "+c.name, func(d DeviceFacts) ([]LaunchInfo, error) { return p.Launches(d, a) })
	}
}
