// Command baracuda inspects the GPU and driver, checks every kernel against
// the float64 reference, and benchmarks the kernels.
//
//	baracuda info       driver, GPUs, embedded PTX modules and whether this driver can JIT them
//	baracuda selftest   every (op, dtype) on the GPU against the reference; CPU checks without one
//	baracuda warm       fill the driver's JIT cache with every kernel, in parallel worker processes
//	baracuda bench      benchmark cases of bench/README.md against the copy bandwidth
//	                    (-coldstart: the first Run of each plan in a fresh process, JIT included)
package main

import (
	"fmt"
	"os"
)

const usage = `usage: baracuda <command> [flags]

commands:
  info       driver version, GPUs, embedded PTX modules and JIT compatibility
  selftest   run every kernel on the GPU against the float64 reference
             (without a GPU: check the reference and the embedded PTX only)
  warm       fill the driver's JIT cache with every kernel for this GPU, in
             parallel, so that no program's first Run waits for the compiler
  bench      time every benchmark case; see 'baracuda bench -h'
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "info":
		err = runInfo(os.Stdout, os.Args[2:])
	case "selftest":
		err = runSelftest(os.Stdout, os.Args[2:])
	case "bench":
		err = runBench(os.Stdout, os.Args[2:])
	case "warm":
		err = runWarm(os.Stdout, os.Args[2:])
	case coldChildCommand: // bench -coldstart's child process, not for users
		err = runColdstartChild(os.Stdout, os.Args[2:])
	case "jit-worker": // a worker process of warm and selftest, not for users
		err = runJITWorker(os.Stdout, os.Args[2:])
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "baracuda: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "baracuda:", err)
		os.Exit(1)
	}
}
