package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// shWorker is a stand-in JIT worker: a shell script printing what a
// worker prints.
func shWorker(script func(i int) string) func(i int) *exec.Cmd {
	return func(i int) *exec.Cmd { return exec.Command("sh", "-c", script(i)) }
}

func TestRunJITWorkersAddsUp(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this machine")
	}
	// Worker i loads i+1 kernels; worker 3 has none and says nothing.
	script := func(i int) string {
		if i == 3 {
			return "true"
		}
		return fmt.Sprintf("for k in $(seq %d); do [ $k = 1 ] && echo 'total %d'; echo loaded; done", i+1, i+1)
	}
	var calls []string
	n, err := runJITWorkers(4, shWorker(script), func(done, total int) {
		calls = append(calls, fmt.Sprintf("%d/%d", done, total))
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Errorf("%d kernels loaded, want 6", n)
	}
	if len(calls) == 0 || calls[len(calls)-1] != "6/6" {
		t.Errorf("progress %v, want it to end at 6/6", calls)
	}
	for _, c := range calls {
		if !strings.HasSuffix(c, "/6") {
			t.Errorf("progress %s before every worker said its total", c)
		}
	}
}

func TestRunJITWorkersReportsAFailure(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this machine")
	}
	script := func(i int) string {
		if i == 1 {
			return "echo 'total 1'; echo 'driver: no device' >&2; exit 3"
		}
		return "echo 'total 1'; echo loaded"
	}
	_, err := runJITWorkers(2, shWorker(script), nil)
	if err == nil || !strings.Contains(err.Error(), "JIT worker 1 of 2") || !strings.Contains(err.Error(), "driver: no device") {
		t.Errorf("error %v, want worker 1's failure with its stderr", err)
	}
}
