package main

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	require.NoError(t, err)
	assert.Equal(t, 6, n, "kernels loaded")
	require.NotEmpty(t, calls, "progress calls")
	assert.Equal(t, "6/6", calls[len(calls)-1], "last progress call")
	for _, c := range calls {
		assert.Regexp(t, `/6$`, c, "progress before every worker said its total")
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
	require.Error(t, err)
	assert.ErrorContains(t, err, "JIT worker 1 of 2")
	assert.ErrorContains(t, err, "driver: no device", "the worker's stderr")
}
