// Command gen turns the spec table into CUDA instantiations, PTX modules, the
// Go support table and README's support matrix.
//
//	go run ./gen           regenerate everything (needs nvcc 11.8)
//	go run ./gen -check    regenerate in memory; fail if any committed file differs
//	go run ./gen -verify   run ptxas on every committed module for sm_70, sm_80, sm_90;
//	                       fail on errors or register spills (beyond a build's SpillBytes)
//
// The PTX is produced by Debian bookworm's nvcc 11.8 (PTX ISA 7.8), which
// every driver since R520 can JIT-compile; scripts/install-nvcc.sh installs it.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// nvccRelease is the only nvcc release whose output is committed: a newer
// one writes a newer PTX ISA that older drivers refuse.
const nvccRelease = "release 11.8"

// nvccArgs are the flags for every module, after -arch (see builds in
// spec.go). Precise math is kept on purpose: the tests compare against a
// float64 reference in ulps.
var nvccArgs = []string{"-ptx", "-O3", "-std=c++14", "-Xcompiler", "-fno-strict-aliasing"}

func (b Build) nvccArgs() []string {
	return append([]string{nvccArgs[0], "-arch=" + b.Arch}, nvccArgs[1:]...)
}

func main() {
	check := flag.Bool("check", false, "regenerate in memory and fail if any committed file differs")
	verify := flag.Bool("verify", false, "run ptxas on every committed PTX module")
	flag.Parse()
	root, err := repoRoot()
	if err != nil {
		fatal(err)
	}
	switch {
	case *verify:
		err = verifyPTX(root)
	default:
		err = generate(root, *check)
	}
	if err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// generate builds every output in memory, then writes them, or with check
// compares them with the files on disk.
func generate(root string, check bool) error {
	version, err := nvccVersion()
	if err != nil {
		return err
	}
	if err := validateBuilds(); err != nil {
		return err
	}
	outputs := map[string][]byte{}
	for _, f := range families {
		if err := f.validate(); err != nil {
			return err
		}
		for _, bd := range builds {
			if !bd.hasFamily(f) {
				continue
			}
			mod := f.Name + bd.Suffix
			cu := f.instantiations(bd)
			outputs[filepath.Join("gen", "z"+mod+".cu")] = cu
			ptx, err := f.compile(root, mod, bd, cu, version)
			if err != nil {
				return err
			}
			outputs[filepath.Join("kernels", "ptx", mod+".ptx")] = ptx
		}
	}
	outputs[filepath.Join("ops", "zkernels.go")] = goTable()
	readme, err := readmeWithMatrix(root)
	if err != nil {
		return err
	}
	outputs["README.md"] = readme

	names := make([]string, 0, len(outputs))
	for n := range outputs {
		names = append(names, n)
	}
	sort.Strings(names)
	var stale []string
	for _, n := range names {
		path := filepath.Join(root, n)
		old, _ := os.ReadFile(path)
		if bytes.Equal(old, outputs[n]) {
			continue
		}
		if check {
			stale = append(stale, n)
			continue
		}
		if err := os.WriteFile(path, outputs[n], 0o644); err != nil {
			return err
		}
		fmt.Println("gen: wrote", n)
	}
	if err := checkNoStrayModules(root, check); err != nil {
		return err
	}
	if len(stale) > 0 {
		return fmt.Errorf("generated files are stale (run `go run ./gen` and commit): %s", strings.Join(stale, ", "))
	}
	if check {
		fmt.Printf("gen: %d generated files match the spec and nvcc %s\n", len(names), version)
	}
	return nil
}

// checkNoStrayModules fails when kernels/ptx holds a module that no family
// generates: it would be embedded but never checked.
func checkNoStrayModules(root string, check bool) error {
	known := map[string]bool{}
	for _, f := range families {
		for _, bd := range builds {
			if bd.hasFamily(f) {
				known[f.Name+bd.Suffix+".ptx"] = true
			}
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "kernels", "ptx"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".ptx") && !known[e.Name()] {
			if !check {
				if err := os.Remove(filepath.Join(root, "kernels", "ptx", e.Name())); err != nil {
					return err
				}
				fmt.Println("gen: removed", e.Name())
				continue
			}
			return fmt.Errorf("kernels/ptx/%s belongs to no family of the spec", e.Name())
		}
	}
	return nil
}

func nvccVersion() (string, error) {
	out, err := exec.Command("nvcc", "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("nvcc not found or failed (%v): install it with scripts/install-nvcc.sh", err)
	}
	m := regexp.MustCompile(`release (\d+\.\d+), V([\d.]+)`).FindStringSubmatch(string(out))
	if m == nil {
		return "", fmt.Errorf("cannot read nvcc's version from %q", out)
	}
	if "release "+m[1] != nvccRelease {
		return "", fmt.Errorf("nvcc %s found, but the committed PTX is made by nvcc %s (PTX ISA 7.8, accepted by drivers since R520): install it with scripts/install-nvcc.sh", m[2], nvccRelease)
	}
	return m[2], nil
}

// compile runs nvcc on the family's instantiation file and prefixes the PTX
// with a header recording the source hash and the compiler.
func (f *Family) compile(root, mod string, bd Build, cu []byte, version string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "baracuda-gen-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// nvcc reads the instantiations from a temporary copy so that -check
	// never needs to write into the tree; includes resolve through -I gen.
	src := filepath.Join(tmp, "z"+mod+".cu")
	if err := os.WriteFile(src, cu, 0o644); err != nil {
		return nil, err
	}
	out := filepath.Join(tmp, mod+".ptx")
	args := append(bd.nvccArgs(), "-I", filepath.Join(root, "gen"), "-o", out, src)
	cmd := exec.Command("nvcc", args...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("nvcc failed on family %s: %v\n%s", f.Name, err, msg)
	}
	ptx, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	hash, err := f.sourceHash(root, cu)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by \"go run ./gen\" from gen/%s and gen/z%s.cu; DO NOT EDIT.\n", f.Header, mod)
	fmt.Fprintf(&b, "// baracuda module: %s\n", mod)
	fmt.Fprintf(&b, "// source sha256: %s\n", hash)
	fmt.Fprintf(&b, "// nvcc: %s (%s)\n", version, nvccRelease)
	fmt.Fprintf(&b, "// command: nvcc %s -I gen -o kernels/ptx/%s.ptx gen/z%s.cu\n", strings.Join(bd.nvccArgs(), " "), mod, mod)
	b.Write(ptx)
	return b.Bytes(), nil
}

// sourceHash covers every CUDA source the module is built from.
func (f *Family) sourceHash(root string, cu []byte) (string, error) {
	h := sha256.New()
	for _, name := range []string{"common.cuh", f.Header} {
		src, err := os.ReadFile(filepath.Join(root, "gen", name))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", name, len(src))
		h.Write(src)
	}
	fmt.Fprintf(h, "z%s.cu %d\n", f.Name, len(cu))
	h.Write(cu)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// verifyPTX assembles every committed module for each target architecture.
func verifyPTX(root string) error {
	if _, err := exec.LookPath("ptxas"); err != nil {
		return errors.New("ptxas not found: install it with scripts/install-nvcc.sh")
	}
	spill := regexp.MustCompile(`(\d+) bytes spill stores, (\d+) bytes spill loads`)
	failed := 0
	for _, f := range families {
		for _, bd := range builds {
			if bd.hasFamily(f) {
				failed += verifyModule(root, f.Name+bd.Suffix, bd.Verify, bd.SpillBytes[f.Name], spill)
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("ptx:verify: %d module/architecture pairs failed", failed)
	}
	return nil
}

// verifyModule assembles one module for each of archs and returns how many
// of them failed: ptxas errors, or a kernel whose spill stores exceed
// budget bytes (0: any spill fails).
func verifyModule(root, mod string, archs []string, budget int, spill *regexp.Regexp) int {
	failed := 0
	path := filepath.Join(root, "kernels", "ptx", mod+".ptx")
	for _, arch := range archs {
		cmd := exec.Command("ptxas", "-arch="+arch, "-v", "-o", os.DevNull, path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			fmt.Printf("ptx:verify: %s %s: ptxas failed: %v\n%s\n", mod, arch, err, out)
			failed++
			continue
		}
		spills, over, most := 0, 0, 0
		for _, m := range spill.FindAllStringSubmatch(string(out), -1) {
			st, _ := strconv.Atoi(m[1])
			if st == 0 && m[2] == "0" {
				continue
			}
			spills++
			if budget == 0 || st > budget {
				over++
			}
			most = max(most, st)
		}
		if over > 0 {
			fmt.Printf("ptx:verify: %s %s: %d kernels spill more than %d bytes\n%s\n", mod, arch, over, budget, out)
			failed++
			continue
		}
		kernels := strings.Count(string(out), "Compiling entry function")
		if spills > 0 {
			fmt.Printf("ptx:verify: %s %s ok (%d kernels, %d spill at most %d bytes, allowed %d)\n", mod, arch, kernels, spills, most, budget)
			continue
		}
		fmt.Printf("ptx:verify: %s %s ok (%d kernels, no spills)\n", mod, arch, kernels)
	}
	return failed
}
