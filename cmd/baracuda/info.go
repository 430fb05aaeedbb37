package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/kernels/ptx"
	"github.com/baracuda-go/baracuda/nccl"
	"github.com/baracuda-go/baracuda/ops"
)

// minCC is the lowest compute capability the PTX targets (compute_70).
const minCCMajor, minCCMinor = ops.MinComputeMajor, ops.MinComputeMinor

func runInfo(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("info", flag.ContinueOnError)
	if err := parseFlags(w, fs, args); err != nil {
		return err
	}
	driverVersion := 0
	if err := driver.Load(); err != nil {
		fmt.Fprintf(w, "driver: not available: %v\n", err)
	} else if v, err := driver.Version(); err != nil {
		fmt.Fprintf(w, "driver: version unknown: %v\n", err)
	} else {
		driverVersion = v
		fmt.Fprintf(w, "driver: CUDA %s (%d)\n", driver.FormatCUDAVersion(v), v)
		if err := printDevices(w); err != nil {
			return err
		}
	}
	// NCCL is optional: only the multi-GPU collectives (package nccl) need it.
	if v, err := nccl.Version(); err != nil {
		fmt.Fprintf(w, "nccl: not available: %v\n", err)
	} else {
		path, _ := nccl.LibraryPath()
		fmt.Fprintf(w, "nccl: %s from %s\n", nccl.FormatVersion(v), path)
	}
	fmt.Fprintln(w, "\nembedded PTX (one module per kernel, JIT-compiled on first use):")
	for _, mod := range ptx.Modules() {
		names, err := ptx.Entries(mod)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			continue
		}
		// Every kernel of a build has the same PTX ISA and target.
		src, err := ptx.Kernel(mod, names[0])
		if err != nil {
			return err
		}
		maj, min, err := driver.PTXVersion(src)
		if err != nil {
			return fmt.Errorf("module %s: %w", mod, err)
		}
		target, _ := driver.PTXTarget(src)
		need, _ := driver.MinDriverForPTX(maj, min)
		jit := "no driver to ask"
		if driverVersion > 0 {
			if err := driver.CheckPTXVersion(src, driverVersion); err != nil {
				jit = "NO: " + err.Error()
			} else {
				jit = "yes"
			}
		}
		fmt.Fprintf(w, "  %-12s PTX ISA %d.%d, %s, needs CUDA %s+, %3d kernels, this driver can JIT it: %s\n",
			mod, maj, min, target, driver.FormatCUDAVersion(need), len(names), jit)
	}
	fmt.Fprintf(w, "  %d kernels in all\n", len(ops.Kernels()))
	printJITCache(w)
	return nil
}

func printDevices(w io.Writer) error {
	n, err := driver.DeviceCount()
	if err != nil {
		return err
	}
	if n == 0 {
		fmt.Fprintln(w, "GPUs: none")
	}
	for i := 0; i < n; i++ {
		d, err := driver.GetDevice(i)
		if err != nil {
			return err
		}
		name, _ := d.Name()
		maj, min, _ := d.ComputeCapability()
		sms, _ := d.SMCount()
		mem, _ := d.TotalMem()
		supported := "supported"
		if err := driver.CheckComputeCapability(maj, min, minCCMajor, minCCMinor); err != nil {
			supported = err.Error()
		}
		fmt.Fprintf(w, "GPU %d: %s, compute capability %d.%d, %d SMs, %.1f GiB (%s)\n",
			i, name, maj, min, sms, float64(mem)/(1<<30), supported)
	}
	return nil
}
