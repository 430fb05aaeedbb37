package ops

import "os"

// knob returns the value of a kernel developer's environment knob: a
// BARACUDA_ variable of CONTRIBUTING.md's "Developer knobs" table, which
// steers a plan onto one kernel path (or loads kernels from elsewhere) so
// that a test or a benchmark reaches it. The package reads every knob
// through here, when a plan is made or a kernel is loaded, and
// TestKnobsOnePlace holds the code and the table together. Users leave
// them unset.
func knob(name string) string { return os.Getenv(name) }
