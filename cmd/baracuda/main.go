// Command baracuda inspects the GPU and driver, checks every kernel against
// the float64 reference, and benchmarks the kernels.
//
//	baracuda info       driver, GPUs, embedded PTX modules and whether this driver can JIT them
//	baracuda selftest   every (op, dtype) on the GPU against the reference; CPU checks without one
//	baracuda warm       fill the driver's JIT cache with every kernel, in parallel worker processes
//	baracuda bench      benchmark cases of bench/README.md against the copy bandwidth
//	                    (-coldstart: the first Run of each plan in a fresh process, JIT included;
//	                    -shapes: every reduce and scan op over seven layouts and three kinds of data;
//	                    -nccl: NCCL all-reduce bus bandwidth over every visible GPU)
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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
  version    the module version, Go version, PTX ISA and the nvcc that made it
  help CMD   a command's flags
`

// commands are the user's commands, and the hidden ones that baracuda
// runs as its own child processes.
var commands = map[string]func(io.Writer, []string) error{
	"info":     runInfo,
	"selftest": runSelftest,
	"bench":    runBench,
	"warm":     runWarm,
	"version":  runVersion,
	// Not for users: bench -coldstart's child process, and a worker
	// process of warm and selftest.
	coldChildCommand: runColdstartChild,
	"jit-worker":     runJITWorker,
	// Not for users: one process of bench -nccl -nccl-procs.
	ncclBenchRankCommand: runNCCLBenchRank,
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run runs one command line and returns the exit status: 0, 1 for a
// failure, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "help":
		if len(rest) == 0 {
			fmt.Fprint(stdout, usage)
			return 0
		}
		name, rest = rest[0], []string{"-h"}
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "baracuda: unknown command %q\n\n%s", name, usage)
		return 2
	}
	err := cmd(stdout, rest)
	var uerr usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &uerr):
		fmt.Fprintf(stderr, "baracuda %s: %v\n", name, err)
		return 2
	default:
		fmt.Fprintln(stderr, "baracuda:", err)
		return 1
	}
}

// usageError is a command line the command cannot take: a bad flag or
// value, or an argument it does not expect.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// parseFlags parses a command's flags and rejects anything after them.
// -h writes the command's flags to w (its standard output); a bad flag is
// a usageError, which main reports.
func parseFlags(w io.Writer, fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(w, "usage: baracuda %s [flags]\n\nflags:\n", fs.Name())
			fs.SetOutput(w)
			fs.PrintDefaults()
			return err
		}
		return usageError{fmt.Errorf("%v (see 'baracuda help %s')", err, fs.Name())}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q (flags come as -name value; see 'baracuda help %s')", fs.Arg(0), fs.Name())}
	}
	return nil
}
