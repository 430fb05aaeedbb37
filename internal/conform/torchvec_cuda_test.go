//go:build cuda

package conform

import (
	"testing"

	"github.com/baracuda-go/baracuda/internal/torchvec"
)

// TestTorchVectorsGPU runs every case of the PyTorch vectors
// (internal/torchvec; $BARACUDA_TORCH_VECTORS names a file to use instead
// of the embedded one) through the plans and compares the gradients with
// PyTorch's. Without the vector file it fails, saying how to generate it.
func TestTorchVectorsGPU(t *testing.T) {
	env := testEnv(t)
	set, err := torchvec.Load()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(set.Describe())
	reportTorchVectors(t, env.CheckTorchVectors(set))
}

// TestTorchVectorsSampleGPU runs the hand-made sample the same way.
func TestTorchVectorsSampleGPU(t *testing.T) {
	env := testEnv(t)
	set, err := torchvec.LoadSample()
	if err != nil {
		t.Fatal(err)
	}
	reportTorchVectors(t, env.CheckTorchVectors(set))
}

func reportTorchVectors(t *testing.T, outs []torchvec.Outcome) {
	t.Helper()
	for _, o := range outs {
		t.Run(o.Case.Name, func(t *testing.T) {
			errs, note := o.Verdict()
			if note != "" {
				t.Log(note)
			}
			for _, m := range errs {
				t.Error(m)
			}
		})
	}
	pass, fail, open, alt := torchvec.Summary(outs)
	t.Logf("%d cases pass, %d fail, %d known open; %d elements matched PyTorch's float64 value only", pass, fail, open, alt)
}
