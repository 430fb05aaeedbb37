package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// TestColdstartCasesCoverKernels checks that the cases hold one plan for
// every (family, op, dtype) the library has kernels for, and nothing else.
func TestColdstartCasesCoverKernels(t *testing.T) {
	cases := coldstartCases()
	have := map[string]int{}
	for _, c := range cases {
		key := fmt.Sprintf("%s/%s/%s", c.family, c.op, c.dt.Suffix())
		have[key]++
		if prefix := "coldstart/" + key + "/"; !strings.HasPrefix(c.name, prefix) {
			t.Errorf("case %s: name does not start with %s", c.name, prefix)
		}
		if c.setup == nil {
			t.Errorf("case %s: no setup", c.name)
		}
	}
	want := map[string]bool{}
	for _, k := range ops.Kernels() {
		want[fmt.Sprintf("%s/%s/%s", k.Family, k.Op, k.DType.Suffix())] = true
	}
	for key := range want {
		if have[key] == 0 {
			t.Errorf("no coldstart case for %s", key)
		}
	}
	for key := range have {
		if !want[key] {
			t.Errorf("coldstart case %s names no kernel of the library", key)
		}
	}
	// Reductions and scans once per axis, the rest once.
	for key, n := range have {
		wantN := 1
		if strings.HasPrefix(key, "reduce/") || strings.HasPrefix(key, "scan/") {
			wantN = 2
		}
		if n != wantN {
			t.Errorf("%s: %d cases, want %d", key, n, wantN)
		}
	}
	if n, want := len(cases), 4*(2*len(ops.BinaryOps())+2*len(ops.ReduceOps())+2*len(ops.ScanOps())+len(coldLpPool)); n != want {
		t.Errorf("%d cases, want %d", n, want)
	}
	if len(dtype.All) != 4 {
		t.Errorf("dtype.All has %d types; the case count above assumes 4", len(dtype.All))
	}
}

func TestColdstartCaseNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range coldstartCases() {
		if seen[c.name] {
			t.Errorf("case name %s appears twice", c.name)
		}
		seen[c.name] = true
		if strings.ContainsAny(c.name, " \t\n,") {
			t.Errorf("case name %q holds a space or comma", c.name)
		}
	}
}

func TestFilterColdCases(t *testing.T) {
	all := coldstartCases()
	if got := filterColdCases(all, ""); len(got) != len(all) {
		t.Errorf("empty filter: %d cases, want all %d", len(got), len(all))
	}
	got := filterColdCases(all, "coldstart/reduce/var/bf16/")
	var names []string
	for _, c := range got {
		names = append(names, c.name)
	}
	want := []string{"coldstart/reduce/var/bf16/1024x1024/axis1", "coldstart/reduce/var/bf16/1024x1024/axis0"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("filter reduce/var/bf16: got %v, want %v", names, want)
	}
	for _, c := range filterColdCases(all, "/lppool/") {
		if c.family != "lppool" {
			t.Errorf("filter /lppool/ kept %s", c.name)
		}
	}
	if n := len(filterColdCases(all, "/lppool/")); n != 4*len(coldLpPool) {
		t.Errorf("filter /lppool/: %d cases, want %d", n, 4*len(coldLpPool))
	}
	if got := filterColdCases(all, "no such case"); len(got) != 0 {
		t.Errorf("filter matching nothing kept %d cases", len(got))
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{10, 10, 1, 1000}, 10},
	} {
		in := append([]float64(nil), tc.in...)
		if got := median(in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Errorf("median(%v) reordered its argument", tc.in)
				break
			}
		}
	}
}

func TestSummarizeCold(t *testing.T) {
	results := []coldResult{
		{Case: "b1", Family: "binary", FirstMS: 30},
		{Case: "r1", Family: "reduce", FirstMS: 900},
		{Case: "b2", Family: "binary", FirstMS: 10},
		{Case: "b3", Family: "binary", FirstMS: 20},
		{Case: "r2", Family: "reduce", FirstMS: 5000, Error: "first Run: boom"},
		{Case: "r3", Family: "reduce", FirstMS: 1100},
	}
	got := summarizeCold(results)
	want := []coldSummary{
		{Family: "binary", Plans: 3, Median: 20, Worst: 30, WorstCase: "b1"},
		{Family: "reduce", Plans: 2, Failed: 1, Median: 1000, Worst: 1100, WorstCase: "r3"},
		{Family: "all", Plans: 5, Failed: 1, Median: 30, Worst: 1100, WorstCase: "r3"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d summaries %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("summary %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// A family whose cases all failed has no median and no worst case.
	s := summarizeColdGroup("scan", []coldResult{{Case: "s1", Family: "scan", Error: "x"}})
	if s != (coldSummary{Family: "scan", Failed: 1}) {
		t.Errorf("all failed: got %+v", s)
	}
}

func TestParseColdResults(t *testing.T) {
	out := []byte("some library chatter\n" +
		`{"case":"a","family":"binary","op":"add","dtype":"f32","init_ms":1,"setup_ms":2,"first_ms":3.5,"second_ms":0.25}` + "\n\n" +
		`{"case":"b","family":"binary","op":"sub","dtype":"f32","error":"first Run: oops"}` + "\n")
	got, err := parseColdResults(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Case != "a" || got[0].FirstMS != 3.5 || got[0].SecondMS != 0.25 || got[1].Error != "first Run: oops" {
		t.Errorf("got %+v", got)
	}
	if _, err := parseColdResults([]byte("{not json\n")); err == nil {
		t.Error("a broken JSON line parsed")
	}
}

func TestWithEnv(t *testing.T) {
	base := []string{"PATH=/bin", "CUDA_CACHE_DISABLE=0", "HOME=/root", "CUDA_CACHE_PATH=/x"}
	got := withEnv(base, "CUDA_CACHE_DISABLE=1", "CUDA_CACHE_PATH=/tmp/c")
	want := []string{"PATH=/bin", "HOME=/root", "CUDA_CACHE_DISABLE=1", "CUDA_CACHE_PATH=/tmp/c"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", got, want)
	}
	if base[1] != "CUDA_CACHE_DISABLE=0" {
		t.Error("withEnv modified its base")
	}
}

func TestFlattenOutput(t *testing.T) {
	if got := flattenOutput([]byte("  line one\n\nline two  \n"), 100); got != "line one / line two" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("a", 50) + strings.Repeat("b", 50)
	if got := flattenOutput([]byte(long), 20); got != strings.Repeat("a", 10)+" ... "+strings.Repeat("b", 10) {
		t.Errorf("got %q", got)
	}
}

func TestWriteColdReport(t *testing.T) {
	var sb strings.Builder
	writeColdReport(&sb, []coldResult{
		{Case: "coldstart/binary/add/f32/n1048576", Family: "binary", InitMS: 300, FirstMS: 812.5, SecondMS: 0.04},
		{Case: "coldstart/scan/cumsum/f32/1024x1024/axis0", Family: "scan", Error: "setup: out of memory"},
	})
	out := sb.String()
	for _, want := range []string{"first Run ms", "812.5", "FAILED coldstart/scan/cumsum/f32/1024x1024/axis0: setup: out of memory", "first Run by family:", "coldstart/binary/add/f32/n1048576\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
