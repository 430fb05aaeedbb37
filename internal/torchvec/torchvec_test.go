package torchvec_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/torchvec"
)

// TestReferenceMatchesTorch compares the float64 reference with every
// case of the generated vectors. Without the vector file it fails, saying
// how to generate it.
func TestReferenceMatchesTorch(t *testing.T) {
	set, err := torchvec.Load()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(set.Describe())
	checkReference(t, set)
}

// TestReferenceMatchesSample runs the same comparison on the hand-made
// sample, whose values come from docs/semantics.md.
func TestReferenceMatchesSample(t *testing.T) {
	set, err := torchvec.LoadSample()
	if err != nil {
		t.Fatal(err)
	}
	outs := checkReference(t, set)
	if _, _, _, alt := torchvec.Summary(outs); alt == 0 {
		t.Error("no element of the sample matched PyTorch's float64 value only: its alt entries went unused")
	}
}

func checkReference(t *testing.T, set *torchvec.Set) []torchvec.Outcome {
	t.Helper()
	outs := torchvec.CheckReference(set)
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
	return outs
}

// TestLoadMissing: with no file at the path PathEnv names, Load's error
// names the variable; the embedded file's absence is ErrMissing with the
// command that generates it.
func TestLoadMissing(t *testing.T) {
	t.Setenv(torchvec.PathEnv, t.TempDir()+"/none.json")
	if _, err := torchvec.Load(); err == nil || !strings.Contains(err.Error(), torchvec.PathEnv) {
		t.Errorf("Load with a missing %s file: %v", torchvec.PathEnv, err)
	}
	t.Setenv(torchvec.PathEnv, "")
	if _, err := torchvec.Load(); err != nil && (!errors.Is(err, torchvec.ErrMissing) || !strings.Contains(err.Error(), torchvec.Generate)) {
		t.Errorf("Load's error %q should wrap ErrMissing and give the command %q", err, torchvec.Generate)
	}
}

// TestParse decodes each dtype's bit patterns exactly and rejects
// incomplete cases with an error naming the case and the field.
func TestParse(t *testing.T) {
	head := `{"format": "baracuda-torch-vectors", "version": 1, "torch": "t", "device": "cpu", "cases": [`
	good := `{"name": "b", "family": "binary", "op": "mul", "dtype": "bf16", "shape": [2], "params": {},
		"tensors": {"dy": "3f80ff80", "a": "7fc00001", "b": "3f800000", "da": "00000000", "db": "00000000"}}`
	set, err := torchvec.Parse([]byte(head+good+`]}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	c := set.Cases[0]
	if c.DType != dtype.BF16 || c.Tensors["dy"][0] != 1 || !math.IsInf(c.Tensors["dy"][1], -1) ||
		!math.IsNaN(c.Tensors["a"][0]) || c.Tensors["a"][1] != 0x1p-133 {
		t.Errorf("decoded %v", c.Tensors)
	}
	for _, bad := range []struct{ json, want string }{
		{strings.Replace(good, `"3f80ff80"`, `"3f80ff"`, 1), `tensor "dy"`},
		{strings.Replace(good, `"binary"`, `"conv"`, 1), `family "conv"`},
		{strings.Replace(good, `"mul"`, `"cumsum"`, 1), `op "cumsum"`},
		{strings.Replace(good, `"db": "00000000"`, `"dz": "00000000"`, 1), `tensor "db" is missing`},
		{strings.Replace(good, `"params": {}`, `"params": {}, "alt": {"da": {"index": [2], "bits": "0000"}}`, 1), "index 2"},
		{good + `, ` + good, `"b" is used twice`},
	} {
		_, err := torchvec.Parse([]byte(head+bad.json+`]}`), "test")
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse: error %v, want one containing %q", err, bad.want)
		}
	}
	if _, err := torchvec.Parse([]byte(`{"format": "other", "version": 1}`), "test"); err == nil {
		t.Error("Parse accepted another format")
	}
}
