//go:build cuda

package ops

import "testing"

// TestScanLaunchesOnDevice: on the test's GPU, Launches with the context's
// facts (the driver's builds and occupancy, kernels loaded as a Run loads
// them) equals Launches with the same facts filled by hand (modelled), for
// the decision table's plans, so that the table's launches hold on a GPU
// whose facts it lists; and where the GPU matches a table device (compute
// capability and SMs), the launches are the table's.
func TestScanLaunchesOnDevice(t *testing.T) {
	ctx := deviceContext(t)
	dev := DeviceFactsOf(ctx)
	model := dev
	model.ctx = nil
	t.Logf("device facts: %+v", model)
	for _, c := range scanPolicyCases {
		p, err := NewScanBackward(c.desc)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a := c.args(p)
		got, err := p.Launches(dev, a)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		modelled, err := p.Launches(model, a)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if g, m := launchString(got), launchString(modelled); g != m {
			t.Errorf("%s: the device's launches differ from the model's:\n device %s\n  model %s", c.name, g, m)
		}
		for _, d := range c.devs {
			if d.facts.Major == dev.Major && d.facts.Minor == dev.Minor && d.facts.SMs == dev.SMs {
				if g := launchString(got); g != d.want {
					t.Errorf("%s: on this GPU\n got %s\nwant %s", c.name, g, d.want)
				}
			}
		}
	}
}
