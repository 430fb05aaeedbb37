//go:build cuda

package conform

import (
	"os"
	"sync"
	"testing"
)

var (
	envOnce sync.Once
	envVal  *Env
	envErr  error
)

// testEnv opens device 0 once per test binary. With the cuda tag a missing
// GPU is a failure, not a skip: these tests exist to run on one.
func testEnv(t *testing.T) *Env {
	t.Helper()
	envOnce.Do(func() { envVal, envErr = NewEnv(0) })
	if envErr != nil {
		t.Fatalf("GPU environment: %v", envErr)
	}
	return envVal
}

// quick trims the suites when BARACUDA_QUICK=1 (for compute-sanitizer runs,
// which are 10-100x slower).
func quick() bool { return os.Getenv("BARACUDA_QUICK") == "1" }

func report(t *testing.T, r Result) {
	t.Helper()
	t.Logf("%s: %d cases, %d elements, max %.0f ulp", r.Kernel, r.Cases, r.Checked, r.MaxULP)
	for _, f := range r.Fail {
		t.Error(f)
	}
	if r.Checked == 0 && r.OK() {
		t.Errorf("%s: no element was compared", r.Kernel)
	}
}
