package ops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/internal/ref"
)

// opNames spells each op as kernel names do.
func opNames[T fmt.Stringer](ops []T) []string {
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = op.String()
	}
	return names
}

// tableOps lists the op names of family's rows in the generated kernel
// table (the spec's op list), in spec order.
func tableOps(family string) []string {
	var names []string
	for i := range kernelTable {
		if k := &kernelTable[i]; k.family == family && !slices.Contains(names, k.op) {
			names = append(names, k.op)
		}
	}
	return names
}

// pyList reads the list assigned to name at the start of a line of a
// Python script's source, e.g. BINARY = ["add", "sub"].
func pyList(t *testing.T, path string, src []byte, name string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` = \[(.*)\]$`).FindSubmatch(src)
	if m == nil {
		t.Fatalf("%s: no line %s = [...]", path, name)
	}
	var names []string
	for _, q := range regexp.MustCompile(`"([^"]*)"`).FindAllSubmatch(m[1], -1) {
		names = append(names, string(q[1]))
	}
	return names
}

// pySource reads the Python script at path. A test binary copied to a GPU
// host runs without the source tree; there it skips, as genSource does.
func pySource(t *testing.T, path string) []byte {
	t.Helper()
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("%s is not here (a test binary run outside the repository)", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// pyForward reports whether a Python script's source has a forward for
// op: an entry "op": lambda of one of its forward tables.
func pyForward(src []byte, op string) bool {
	return regexp.MustCompile(`"` + regexp.QuoteMeta(op) + `": lambda\b`).Match(src)
}

// TestOpListsAgree ties each family's op lists to the spec's: the op names
// of the generated kernel table, the Go enum (the *Ops functions; for LP
// pool the names NewLpPool*Backward spells from p), the reference's lists
// in internal/ref and the PyTorch scripts' lists (bench/torch_ref.py,
// scripts/torch_vectors.py), all in one order, and each script has a
// forward ("op": lambda) for every op of its list. A spec op without an
// enum value is otherwise unreachable, and an enum value without kernels
// fails only when a plan is made. Every enum value must also have the
// kernels of the variants that serve every op, in every dtype.
func TestOpListsAgree(t *testing.T) {
	const torchRef, torchVectors = "../bench/torch_ref.py", "../scripts/torch_vectors.py"
	cases := []struct {
		family   string
		enum     []string
		variants []string // the variants every op has
		ref      []string // nil: no list in internal/ref
		py       string   // the scripts' list name, "" for none
	}{
		{"binary", opNames(BinaryOps()), []string{""}, ref.BinaryOps, "BINARY"},
		{"bcast", opNames(BinaryOps()), []string{"tile", "gen"}, ref.BinaryOps, ""},
		{"reduce", opNames(ReduceOps()), []string{"row", "col", "seg"}, ref.ReduceOps, "REDUCE"},
		{"scan", opNames(ScanOps()), []string{"row", "col"}, ref.ScanOps, "SCAN"},
		{"lppool", []string{"p1", "p2", "general"}, lpVariants[:], nil, ""},
	}
	for _, c := range cases {
		t.Run(c.family, func(t *testing.T) {
			if got := tableOps(c.family); !slices.Equal(got, c.enum) {
				t.Errorf("kernel table (gen/spec_%s.go) has ops %q, the Go enum %q", c.family, got, c.enum)
			}
			for _, op := range c.enum {
				for _, dt := range dtype.All {
					for _, v := range c.variants {
						if _, ok := lookupKernel(c.family, op, dt, v); !ok {
							t.Errorf("%s %s %s: no %q kernel in the table", c.family, op, dt, v)
						}
					}
				}
			}
			if c.ref != nil && !slices.Equal(c.ref, c.enum) {
				t.Errorf("internal/ref lists %q, the Go enum %q", c.ref, c.enum)
			}
			if c.py != "" {
				for _, path := range []string{torchRef, torchVectors} {
					src := pySource(t, path)
					if got := pyList(t, path, src, c.py); !slices.Equal(got, c.enum) {
						t.Errorf("%s: %s = %q, the Go enum %q", path, c.py, got, c.enum)
					}
					for _, op := range c.enum {
						if !pyForward(src, op) {
							t.Errorf("%s: no forward \"%s\": lambda for %s op %s", path, op, c.family, op)
						}
					}
				}
			}
		})
	}
}

// TestBinaryNeedsSavedAgrees ties the plan's rule for which ops read a and
// b (Check requires them, Run passes them) to the reference's.
func TestBinaryNeedsSavedAgrees(t *testing.T) {
	for _, op := range BinaryOps() {
		if got, want := op.needsSaved(), ref.BinaryNeedsSaved(op.String()); got != want {
			t.Errorf("%s: needsSaved %v, ref.BinaryNeedsSaved %v", op, got, want)
		}
	}
}

// TestReduceNeedsSavedAgrees ties the reduce plan's rule for which ops
// read x and y (Check requires them, Run passes them) to the reference's
// (package cpu takes nil for the others).
func TestReduceNeedsSavedAgrees(t *testing.T) {
	for _, op := range ReduceOps() {
		if got, want := op.needsSaved(), ref.ReduceNeedsSaved(op.String()); got != want {
			t.Errorf("%s: needsSaved %v, ref.ReduceNeedsSaved %v", op, got, want)
		}
	}
}
