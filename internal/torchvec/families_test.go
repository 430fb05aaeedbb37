package torchvec

import (
	"slices"
	"testing"

	"github.com/baracuda-go/baracuda/internal/ref"
)

// TestFamiliesAgree ties the ops a vector file may hold (families) to the
// reference's lists, which ops' TestOpListsAgree ties to the spec: an op
// added to a family without its name here would make decode reject the
// vectors once they are regenerated with it.
func TestFamiliesAgree(t *testing.T) {
	for family, want := range map[string][]string{"binary": ref.BinaryOps, "reduce": ref.ReduceOps, "scan": ref.ScanOps} {
		if got := families[family].ops; !slices.Equal(got, want) {
			t.Errorf("families[%q] lists %q, internal/ref %q", family, got, want)
		}
	}
}
