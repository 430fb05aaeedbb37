package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/internal/conform"
	"github.com/baracuda-go/baracuda/internal/ref"
	"github.com/baracuda-go/baracuda/internal/torchvec"
	"github.com/baracuda-go/baracuda/ops"
)

func runSelftest(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("selftest", flag.ContinueOnError)
	full := fs.Bool("full", false, "run the full GPU test cases instead of the quick set")
	device := fs.Int("device", 0, "GPU ordinal")
	if err := parseFlags(w, fs, args); err != nil {
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
	vectors, err := torchvec.Load()
	if err != nil {
		fmt.Fprintf(w, "  reference vs PyTorch vectors: FAIL: %v\n", err)
		failed++
	} else {
		failed += reportTorchVectors(w, "reference vs PyTorch vectors", vectors, torchvec.CheckReference(vectors))
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
	if err := warmAll(w, env.Ctx, *device); err != nil {
		return fmt.Errorf("loading the kernels: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kernel\tcases\telements\tmax ulp\tresult\t")
	kernels := 0
	start := time.Now()
	results, err := runSuites(env, !*full)
	if err != nil {
		return err
	}
	for _, rs := range results {
		for _, r := range rs {
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
	if vectors != nil {
		failed += reportTorchVectors(w, "GPU vs PyTorch vectors", vectors, env.CheckTorchVectors(vectors))
	}
	return failures(failed)
}

// maxVectorFailures is how many failing vector cases selftest describes.
const maxVectorFailures = 20

// reportTorchVectors prints the pass, fail and known-open counts of a
// comparison with the PyTorch vectors, and the first failing cases, and
// returns the number of failing cases (known-open ones not counted).
func reportTorchVectors(w io.Writer, what string, set *torchvec.Set, outs []torchvec.Outcome) int {
	pass, fail, open, alt := torchvec.Summary(outs)
	status := "pass"
	if fail > 0 {
		status = "FAIL"
	}
	fmt.Fprintf(w, "  %s: %d cases, %d pass, %d fail, %d known open (%d elements matched PyTorch's float64 value only): %s\n",
		what, len(outs), pass, fail, open, alt, status)
	fmt.Fprintf(w, "    %s\n", set.Describe())
	shown := 0
	for i := range outs {
		if errs, _ := outs[i].Verdict(); len(errs) > 0 {
			if shown++; shown > maxVectorFailures {
				fmt.Fprintf(w, "    ... %d more failing cases\n", fail-maxVectorFailures)
				break
			}
			fmt.Fprintf(w, "    %s: %s\n", outs[i].Case.Name, errs[0])
		}
	}
	return fail
}

// runSuites runs the families' suites at once, each on a stream of its
// own (the float64 reference of each case is computed on the host, one
// core a family), and returns their results in family order.
func runSuites(env *conform.Env, quick bool) ([][]conform.Result, error) {
	suites := conform.Suites()
	results := make([][]conform.Result, len(suites))
	envs := make([]*conform.Env, len(suites))
	for i := range suites {
		e, err := env.WithStream()
		if err != nil {
			return nil, err
		}
		defer e.Close()
		envs[i] = e
	}
	var wg sync.WaitGroup
	for i, s := range suites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.Run(envs[i], quick)
		}()
	}
	wg.Wait()
	return results, nil
}

// warmAll loads every kernel on ctx before the checks run and shows its
// progress: on a host whose JIT cache is empty this is most of
// selftest's time. Where the cache is on, worker processes fill it first
// (drivers before CUDA 12.0 compile one kernel at a time per process), and
// the loads here come from it.
func warmAll(w io.Writer, ctx *driver.Context, device int) error {
	start := time.Now()
	if cfg := processJITCache(); cfg.Enabled {
		// The fill only saves time: where it fails, the loads below
		// compile what is missing.
		procs := defaultWarmProcs(ctx.Device())
		if _, err := fillJITCache(device, procs, progressPrinter(w, "compiling kernels into the JIT cache", start)); err != nil {
			fmt.Fprintf(w, "  filling the JIT cache from %d processes failed (%v): compiling in this process\n", procs, err)
		}
	} else {
		fmt.Fprintf(w, "  the driver's JIT cache is off (%s=%s): compiling in this process\n", envCacheDisable, cfg.Disable)
	}
	loaded := 0
	show := progressPrinter(w, "loading kernels", start)
	err := ops.WarmAll(ctx, ops.WarmOptions{Progress: func(done, total int) {
		loaded = done
		show(done, total)
	}})
	if err == nil {
		fmt.Fprintf(w, "  %d kernels loaded in %.1fs\n", loaded, time.Since(start).Seconds())
	}
	return err
}

func failures(n int) error {
	if n > 0 {
		return fmt.Errorf("selftest: %d checks failed", n)
	}
	return nil
}
