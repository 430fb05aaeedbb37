package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// TestConstsOneSource keeps the constants of gen/spec_consts.go single
// sourced: no hand-written header of gen/ #defines one of them again, and
// the headers that set up each family's shared constants include
// zconsts.cuh. (ops/zconsts.go and gen/zconsts.cuh themselves are checked
// against the table by `go run ./gen -check`.)
func TestConstsOneSource(t *testing.T) {
	if err := validateConsts(); err != nil {
		t.Fatal(err)
	}
	headers, err := filepath.Glob("*.cuh")
	if err != nil {
		t.Fatal(err)
	}
	define := regexp.MustCompile(`(?m)^\s*#\s*define\s+(\w+)`)
	for _, h := range headers {
		if h == "zconsts.cuh" {
			continue
		}
		src, err := os.ReadFile(h)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range define.FindAllSubmatch(src, -1) {
			if i := slices.IndexFunc(consts, func(c Const) bool { return c.Name == string(m[1]) }); i >= 0 {
				t.Errorf("gen/%s #defines %s, which comes from gen/spec_consts.go (gen/zconsts.cuh)", h, m[1])
			}
		}
	}
	for _, h := range []string{"reduce_ops.cuh", "scan_ops.cuh"} {
		src, err := os.ReadFile(h)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^#include "zconsts\.cuh"$`).Match(src) {
			t.Errorf("gen/%s does not include zconsts.cuh", h)
		}
	}
}
