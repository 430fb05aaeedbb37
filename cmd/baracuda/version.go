package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/kernels/ptx"
	"github.com/baracuda-go/baracuda/ops"
)

// nvccLineRE reads the compiler line the generator writes at the head of
// every embedded kernel.
var nvccLineRE = regexp.MustCompile(`(?m)^// nvcc (\S+) \(release [\d.]+\)`)

// runVersion prints what this binary is: the module and its version, the
// Go release, and the embedded kernels' PTX ISA and compiler.
func runVersion(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if err := parseFlags(w, fs, args); err != nil {
		return err
	}
	path, version := "github.com/baracuda-go/baracuda", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		// The library is the main module when this command is built from
		// its repository, a dependency when a program embeds it.
		if bi.Main.Path == path {
			version = bi.Main.Version
		}
		for _, dep := range bi.Deps {
			if dep.Path == path {
				version = dep.Version
			}
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && version == "(devel)" {
				version += " " + s.Value
			}
		}
	}
	fmt.Fprintf(w, "%s %s (%s, %s/%s)\n", path, version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	mods := ptx.Modules()
	if len(mods) == 0 {
		return fmt.Errorf("no embedded kernels")
	}
	names, err := ptx.Entries(mods[0])
	if err != nil {
		return err
	}
	src, err := ptx.Kernel(mods[0], names[0])
	if err != nil {
		return err
	}
	maj, min, err := driver.PTXVersion(src)
	if err != nil {
		return err
	}
	nvcc := "unknown"
	if m := nvccLineRE.FindSubmatch(src); m != nil {
		nvcc = string(m[1])
	}
	need, _ := driver.MinDriverForPTX(maj, min)
	fmt.Fprintf(w, "kernels: %d, PTX ISA %d.%d from nvcc %s (drivers for CUDA %s and newer)\n",
		len(ops.Kernels()), maj, min, nvcc, driver.FormatCUDAVersion(need))
	return nil
}
