package conform

import (
	"fmt"
	"math/rand/v2"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

// BroadcastTileCases are the tile path's patterns for its knobs
// (BARACUDA_BCAST_AHEAD, the packs a thread prefetches ahead of its
// loads; BARACUDA_BCAST_TILES, the tiles): b of [C], of [R, 1] and 0-d,
// outer products and a 0-d a, with tails in the packs, the lanes, the
// warps' rows and the tiles, unaligned operands (one pack at a time),
// special values and single outputs. With few tiles a warp walks many
// rows and a thread many packs, so that the prefetches cross rows and
// stop at the tile's end. quick trims it for selftest.
func BroadcastTileCases(quick bool) []BroadcastCase {
	cs := []BroadcastCase{
		{Shape: []int{257, 1000}, AShape: []int{257, 1000}, BShape: []int{1000}},
		{Shape: []int{257, 1000}, AShape: []int{257, 1000}, BShape: []int{257, 1}},
		{Shape: []int{257, 1003}, AShape: []int{257, 1003}, BShape: []int{257, 1}},
		{Shape: []int{257, 1000}, AShape: []int{257, 1000}, BShape: []int{}},
		{Shape: []int{1000}, AShape: []int{}, BShape: []int{1000}},
		{Shape: []int{33, 65}, AShape: []int{33, 1}, BShape: []int{1, 65}},
		{Shape: []int{31, 1}, AShape: []int{31, 1}, BShape: []int{1}},
		{Shape: []int{9, 33}, AShape: []int{9, 33}, BShape: []int{33}, Special: true},
		{Shape: []int{9, 33}, AShape: []int{9, 1}, BShape: []int{9, 33}, Special: true},
		{Shape: []int{129, 67}, AShape: []int{129, 67}, BShape: []int{67}, Layouts: unaligned},
		{Shape: []int{129, 67}, AShape: []int{129, 1}, BShape: []int{}, Layouts: unaligned},
		{Shape: []int{257, 1000}, AShape: []int{257, 1000}, BShape: []int{1000}, NoDA: true},
		{Shape: []int{257, 1000}, AShape: []int{257, 1000}, BShape: []int{257, 1}, NoDB: true},
	}
	if quick {
		return cs
	}
	return append(cs,
		BroadcastCase{Shape: []int{4099, 300}, AShape: []int{4099, 300}, BShape: []int{300}},
		BroadcastCase{Shape: []int{9, 70001}, AShape: []int{9, 70001}, BShape: []int{9, 1}},
		BroadcastCase{Shape: []int{1<<20 + 3}, AShape: []int{1<<20 + 3}, BShape: []int{}},
		BroadcastCase{Shape: []int{512, 4096}, AShape: []int{512, 4096}, BShape: []int{4096}},
		BroadcastCase{Shape: []int{512, 4096}, AShape: []int{512, 4096}, BShape: []int{512, 1}},
		BroadcastCase{Shape: []int{512, 4096}, AShape: []int{512, 4096}, BShape: []int{}},
	)
}

// BroadcastBits runs case c of (op, dt) once, on inputs drawn from seed,
// and returns the bits of da and db (nil where the case wants none), so
// that a test compares the bits of two settings of a knob.
func (e *Env) BroadcastBits(op ops.BinaryOp, dt dtype.DType, c BroadcastCase, seed uint64) ([2][]uint64, error) {
	var out [2][]uint64
	desc := ops.BinaryDesc{Op: op, DType: dt, Alpha: 0.75, Weight: 0.3, Shape: c.Shape, AShape: c.AShape, BShape: c.BShape}
	plan, err := ops.NewBinaryBackward(desc)
	if err != nil {
		return out, err
	}
	rng := rand.New(rand.NewPCG(seed, uint64(op)<<8|uint64(dt)|1<<20))
	in := broadcastInputs(rng, op.String(), dt, c)
	shapes := [5][]int{c.Shape, c.AShape, c.BShape, c.AShape, c.BShape}
	var layouts [5]Layout
	for i := range layouts {
		layouts[i] = c.layout(i, shapes[i])
	}
	var operands [5]*Operand
	defer func() {
		for _, o := range operands {
			o.Free()
		}
	}()
	args, err := e.binaryOperands(dt, shapes, layouts, in, c.NoDA, c.NoDB, &operands)
	if err != nil {
		return out, err
	}
	ws, freeWS, err := e.dirtyWorkspace(plan.WorkspaceSize())
	if err != nil {
		return out, err
	}
	defer freeWS()
	args.Workspace = ws
	if err := plan.Run(e.Stream, &args); err != nil {
		return out, fmt.Errorf("Run: %w", err)
	}
	if err := e.Stream.Synchronize(); err != nil {
		return out, fmt.Errorf("synchronize: %w", err)
	}
	for k, o := range operands[3:] {
		if o == nil {
			continue
		}
		got, err := o.Read()
		if err != nil {
			return out, err
		}
		out[k] = make([]uint64, len(got))
		for i, v := range got {
			out[k][i] = dtype.Bits(dt, v)
		}
	}
	return out, nil
}
