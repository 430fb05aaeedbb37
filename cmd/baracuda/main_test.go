package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunExitStatus: help exits 0 with the usage, a command line the
// command cannot take exits 2 and says why, and no case panics.
func TestRunExitStatus(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		out  string // in stdout or stderr
	}{
		{nil, 2, "usage: baracuda"},
		{[]string{"-h"}, 0, "usage: baracuda"},
		{[]string{"help"}, 0, "commands:"},
		{[]string{"help", "bench"}, 0, "-iters"},
		{[]string{"bench", "-h"}, 0, "-filter"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"bench", "-iters", "0"}, 2, "-iters 0: at least one timed run"},
		{[]string{"bench", "-iters", "-3", "-list"}, 2, "-iters -3"},
		{[]string{"bench", "-list", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"bench", "-nosuchflag"}, 2, "flag provided but not defined"},
		{[]string{"bench", "-list", "-filter", "no/such/case"}, 2, `-filter "no/such/case" matches no case`},
		{[]string{"bench", "-sweep", "-filter", "no/such/case"}, 2, `-filter "no/such/case" matches no -sweep case`},
		{[]string{"bench", "-coldstart", "-list", "-filter", "no/such/case"}, 2, `matches no -coldstart case`},
		{[]string{"bench", "-shapes", "-list", "-filter", "no/such/case"}, 2, `-filter "no/such/case" matches no case`},
		{[]string{"warm", "-procs", "-1"}, 2, "-procs -1"},
		{[]string{"version"}, 0, "PTX ISA 7.8 from nvcc 11.8"},
		{[]string{"version", "x"}, 2, `unexpected argument "x"`},
		{[]string{"bench", "-list", "-filter", "reduce/sum/f32"}, 0, "reduce/sum/f32/4096x4096/axis1"},
		{[]string{"bench", "-sweep", "-list"}, 0, "sweep/lppool2d/p2/f32/1x65536x32x32/k2s2"},
		{[]string{"bench", "-sweep", "-coldstart"}, 2, "two different runs"},
	} {
		var out, errOut bytes.Buffer
		code := run(c.args, &out, &errOut)
		assert.Equal(t, c.code, code, "baracuda %v: exit status", c.args)
		assert.Contains(t, out.String()+errOut.String(), c.out, "baracuda %v: output", c.args)
	}
}

// TestSweepCases: one op of each family at every size from 2^10 to 2^26,
// names unique, each name's size its element count.
func TestSweepCases(t *testing.T) {
	cs := sweepCases()
	require.Len(t, cs, 4*len(sweepSizes()))
	seen := map[string]bool{}
	for _, c := range cs {
		assert.False(t, seen[c.name], "%s twice", c.name)
		seen[c.name] = true
		assert.GreaterOrEqual(t, c.n, 1<<10, c.name)
		assert.LessOrEqual(t, c.n, 1<<26, c.name)
	}
}

// TestMatchFilter: -filter takes a substring of the case name, or several
// separated by |, and the empty filter (or an empty part) takes every case.
func TestMatchFilter(t *testing.T) {
	for _, c := range []struct {
		name, filter string
		want         bool
	}{
		{"reduce/max/bf16/4096x4096/axis0", "", true},
		{"reduce/max/bf16/4096x4096/axis0", "max/bf16", true},
		{"reduce/max/bf16/4096x4096/axis0", "max/f32", false},
		{"reduce/max/bf16/4096x4096/axis0", "max/f32|4096x4096/axis0", true},
		{"reduce/var/f32/32x256x56x56/axes0,2,3", "max/f32|var/bf16", false},
		{"reduce/var/f32/32x256x56x56/axes0,2,3", "max/f32|", true},
	} {
		assert.Equal(t, c.want, matchFilter(c.name, c.filter), "%q in %q", c.filter, c.name)
	}
}
