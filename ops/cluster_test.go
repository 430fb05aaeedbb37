package ops

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/kernels/ptx"
)

// TestReduceClusterSizesAgree ties the blocks per thread block cluster of
// the reduce family's "cluster", "stripc" and "segc" kernels that the
// launcher's grid arithmetic and the kernels' own tiling assume
// (redCluster, redStripCluster and redSegCluster, RED_CLUSTER_BLOCKS,
// RED_STRIP_CLUSTER and RED_SEG_CLUSTER, one row each of
// gen/spec_consts.go) to the cluster size compiled into each kernel
// (.reqnctapercluster in the embedded PTX, from the spec table's Cluster).
// A mismatch would otherwise show only on a GPU, as wrong values where a
// strip's rows are cut between blocks.
func TestReduceClusterSizesAgree(t *testing.T) {
	src := embeddedModule(t, "reduce_sm90")
	want := map[string]int{"_cluster": redCluster, "_stripc": redStripCluster, "_segc": redSegCluster}
	seen := map[string]int{}
	head := regexp.MustCompile(`(?s)^(\w+)\(.*?\)([^{]*)\{`)
	reqn := regexp.MustCompile(`\.reqnctapercluster (\d+), 1, 1`)
	for _, chunk := range strings.Split(src, ".visible .entry ")[1:] {
		m := head.FindStringSubmatch(chunk)
		if m == nil {
			t.Fatalf("reduce_sm90: cannot read the entry at %.60q", chunk)
		}
		for suffix, n := range want {
			if !strings.HasSuffix(m[1], suffix) {
				continue
			}
			seen[suffix]++
			r := reqn.FindStringSubmatch(m[2])
			if r == nil {
				t.Errorf("%s: no .reqnctapercluster directive", m[1])
			} else if got, _ := strconv.Atoi(r[1]); got != n {
				t.Errorf("%s: compiled for clusters of %d blocks, the launcher assumes %d", m[1], got, n)
			}
		}
	}
	for suffix := range want {
		if seen[suffix] == 0 {
			t.Errorf("reduce_sm90 has no kernel ending in %s", suffix)
		}
	}
}

// embeddedModule is the text of every kernel of an embedded module build,
// one after another.
func embeddedModule(t *testing.T, module string) string {
	t.Helper()
	names, err := ptx.Entries(module)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, name := range names {
		src, err := ptx.Kernel(module, name)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(src)
	}
	return b.String()
}
