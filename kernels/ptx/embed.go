// Package ptx embeds the generated PTX modules, one per kernel family.
// The files are written by `go run ./gen` from the CUDA sources in gen/ with
// nvcc 11.8; never edit them by hand.
package ptx

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

//go:embed *.ptx
var files embed.FS

// Module returns the PTX text of one family's module.
func Module(family string) ([]byte, error) {
	b, err := files.ReadFile(family + ".ptx")
	if err != nil {
		return nil, fmt.Errorf("ptx: no embedded module for family %q", family)
	}
	return b, nil
}

// Families lists the embedded modules by family name, sorted.
func Families() []string {
	entries, _ := files.ReadDir(".")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".ptx"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}
