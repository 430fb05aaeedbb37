package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestLayoutsOneSource keeps the launch layouts of gen/spec_layouts.go
// single sourced: no hand-written header of gen/ or Go file of ops/
// declares one of them again, and the family headers include
// zlayouts.cuh. (gen/zlayouts.cuh, ops/zlayouts.go and
// ops/zlayouts_test.go themselves are checked against the table by
// `go run ./gen -check`.)
func TestLayoutsOneSource(t *testing.T) {
	if err := validateLayouts(); err != nil {
		t.Fatal(err)
	}
	read := func(pattern string) map[string][]byte {
		paths, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		srcs := map[string][]byte{}
		for _, p := range paths {
			if filepath.Base(p)[0] == 'z' {
				continue
			}
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			srcs[p] = src
		}
		return srcs
	}
	headers, gofiles := read("*.cuh"), read(filepath.Join("..", "ops", "*.go"))
	for _, l := range layouts {
		c := regexp.MustCompile(`(?m)^\s*struct\s+` + l.C + `\b`)
		for p, src := range headers {
			if c.Match(src) {
				t.Errorf("gen/%s declares struct %s, which comes from gen/spec_layouts.go (gen/zlayouts.cuh)", p, l.C)
			}
		}
		goNames := []string{l.Go}
		for _, f := range l.Fields {
			if f.GoStruct != "" {
				goNames = append(goNames, f.GoStruct)
			}
		}
		for _, n := range goNames {
			g := regexp.MustCompile(`(?m)^\s*(type\s+)?` + n + `\s+struct\b`)
			for p, src := range gofiles {
				if g.Match(src) {
					t.Errorf("%s declares type %s, which comes from gen/spec_layouts.go (ops/zlayouts.go)", p, n)
				}
			}
		}
	}
	for _, h := range []string{"binary.cuh", "lppool_util.cuh", "reduce_ops.cuh", "scan_ops.cuh"} {
		if !regexp.MustCompile(`(?m)^#include "zlayouts\.cuh"$`).Match(headers[h]) {
			t.Errorf("gen/%s does not include zlayouts.cuh", h)
		}
	}
}

// TestCLayoutRules checks cLayout's offsets, size and alignment on layouts
// whose C layout is known: padding before a wider field and at the end.
func TestCLayoutRules(t *testing.T) {
	cases := []struct {
		l           Layout
		offs        string
		size, align int
	}{
		{Layout{C: "A", Fields: []Field{
			{Type: "int", C: "a", Go: "a"},
			{Type: "i64", C: "b", Go: "b", Dims: []Dim{dim(2)}},
			{Type: "float", C: "c d", Go: "c _"},
			{Type: "int", C: "e", Go: "e"},
		}}, "[{a a  0} {b b  8} {c c  24} {d   28} {e e  32}]", 40, 8},
		{Layout{C: "B", Fields: []Field{
			{Type: "float", C: "x", Go: "x"},
			{Type: "unsigned", C: "y", Go: "y", Dims: []Dim{dim(3)}},
		}}, "[{x x  0} {y y  4}]", 16, 4},
		{Layout{C: "C", Fields: []Field{
			{Type: "int", C: "a", Go: "a"},
			{Go: "s", GoStruct: "sub", Sub: []Field{{Type: "double", C: "b", Go: "b"}}},
		}}, "[{a a  0} {b s.b s 8}]", 16, 8},
	}
	for _, c := range cases {
		slots, size, align := c.l.cLayout()
		if got := fmt.Sprint(slots); got != c.offs || size != c.size || align != c.align {
			t.Errorf("layout %s: %s, size %d, align %d; want %s, %d, %d", c.l.C, got, size, align, c.offs, c.size, c.align)
		}
	}
}

// TestValidateLayoutsFails: a field added to a layout changes its size,
// which no longer matches its family's parameter, and a repeated name is
// refused.
func TestValidateLayoutsFails(t *testing.T) {
	saved := layouts
	defer func() { layouts = saved }()
	grown := append([]Layout(nil), saved...)
	grown[0].Fields = append(append([]Field(nil), grown[0].Fields...), Field{Type: "int", C: "extra", Go: "extra"})
	layouts = grown
	if err := validateLayouts(); err == nil {
		t.Error("a layout larger than its family's parameter passed validation")
	}
	twice := append([]Layout(nil), saved...)
	twice[0].Fields = append(append([]Field(nil), twice[0].Fields...), twice[0].Fields[0])
	layouts = twice
	if err := validateLayouts(); err == nil {
		t.Error("a layout with a field declared twice passed validation")
	}
}
