package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/internal/conform"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/ops"
)

func runSelftest(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("selftest", flag.ContinueOnError)
	full := fs.Bool("full", false, "run the full GPU test cases instead of the quick set")
	device := fs.Int("device", 0, "GPU ordinal")
	if err := fs.Parse(args); err != nil {
		return err
	}
	failed := 0
	fmt.Fprintln(w, "CPU checks:")
	for _, c := range ref.Checks() {
		status := "pass"
		if err := c.Run(); err != nil {
			status = "FAIL: " + err.Error()
			failed++
		}
		fmt.Fprintf(w, "  reference: %-40s %s\n", c.Name, status)
	}
	ptxErrs := ops.VerifyEmbeddedPTX()
	for _, err := range ptxErrs {
		fmt.Fprintf(w, "  embedded PTX: FAIL: %v\n", err)
	}
	if len(ptxErrs) == 0 {
		fmt.Fprintf(w, "  embedded PTX: %d kernels match the support table (names, parameter types and order)\n", len(ops.Kernels()))
	}
	failed += len(ptxErrs)

	env, err := conform.NewEnv(*device)
	if err != nil {
		if errors.Is(err, driver.ErrNoDriver) {
			fmt.Fprintf(w, "\nGPU checks: SKIPPED, no CUDA driver on this machine (%v).\n", err)
			fmt.Fprintln(w, "Run this binary on a host with an NVIDIA GPU and driver to check every kernel.")
			return failures(failed)
		}
		return fmt.Errorf("GPU setup: %w", err)
	}
	defer env.Close()
	name, _ := env.Ctx.Device().Name()
	fmt.Fprintf(w, "\nGPU checks on %s (device %d):\n", name, *device)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kernel\tcases\telements\tmax ulp\tresult\t")
	kernels := 0
	start := time.Now()
	for _, s := range conform.Suites() {
		for _, r := range s.Run(env, !*full) {
			kernels++
			status := "pass"
			if !r.OK() {
				status = "FAIL"
				failed++
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%s\t\n", r.Kernel, r.Cases, r.Checked, r.MaxULP, status)
			for _, f := range r.Fail {
				fmt.Fprintf(tw, "  %s\t\t\t\t\t\n", f)
			}
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "%d checks in %.1fs\n", kernels, time.Since(start).Seconds())
	return failures(failed)
}

func failures(n int) error {
	if n > 0 {
		return fmt.Errorf("selftest: %d checks failed", n)
	}
	return nil
}
