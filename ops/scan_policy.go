package ops

// The scan family's launch policy: which kernels a Run launches, with what
// grids, blocks, shared memory and workspace steps, for a plan, its
// operands and a device. Run (scan_launch.go) executes the plan scanPolicy
// returns; Launches reports it.

// scanStep is one step of a scan Run: a launch of k, grid blocks of block
// threads with smem bytes of dynamic shared memory running pass phase of
// the kernel, or, where k is nil, the memset of the workspace's ticket
// counter to all ones.
type scanStep struct {
	k     *kernelRef
	phase int32
	grid  int64
	block int
	smem  int
}

func (st scanStep) kernel() *kernelRef { return st.k }

// scanLaunchPlan is the work of one Run: the kernel layout every launch
// packs (its phase set per step) and the steps in order.
type scanLaunchPlan struct {
	L     scanLayout
	steps [maxSteps]scanStep
	n     int
}

func (pl *scanLaunchPlan) add(k *kernelRef, phase int32, grid int64, block, smem int) {
	pl.steps[pl.n] = scanStep{k: k, phase: phase, grid: grid, block: block, smem: smem}
	pl.n++
}

// scanPolicy maps a plan, its operands (a's strides and base addresses,
// and L, their layout for the plan's geometry: ScanBackward.layout) and a
// device to the launches of a Run. It reads the device only through dev,
// so that Launches reports exactly what Run does. The first row that
// applies decides:
//
//	plan has    operands                device                     launches
//	short       any                     -                          short: staged (inner or
//	                                                               outer form, by layout) where
//	                                                               its shared memory fits,
//	                                                               else direct
//	tallrow     tallLayout              tallrow built              tallrow, tiled
//	tall        tallLayout              tall built                 tall, chunked
//	colstrip    stripLayout, strips >=  colstrip built (8.0), its  colstrip, one launch
//	            3/4 of the SMs          shared memory fits, one
//	                                    wave 3/4 full (stripFills)
//	colpair     pairLayout              colpair built (8.0)        colpair, chunked
//	row or col  any                     -                          the plan's kernel, chunked
//
// The plan's fields come from the descriptor and the knobs, read when it
// is made (NewScanBackward: short, tallrow, tall, strip, pair and carry;
// stripAll lifts the one-wave condition). "Chunked" is scanChunked's
// sequence; "tiled" is scanTiles': the carry passes where the plan takes
// them and the slices are cut into tiles, else chunked.
func (p *ScanBackward) scanPolicy(a *ScanArgs, L *scanLayout, dev *DeviceFacts) (pl scanLaunchPlan, err error) {
	pl.L = *L
	L = &pl.L
	if p.short {
		kf, err := dev.kernel(p.kernel)
		if err != nil {
			return pl, err
		}
		sl := p.shortLaunchFor(L, p.kernel.smem > 0 && kf.smemBlocks > 0, kf.sms)
		pl.add(p.kernel, scanMain, sl.blocks, p.kernel.block, sl.smem)
		return pl, nil
	}
	// The tall mapping's kernels, tallrow first (tiles: its launches,
	// scanTiles, look-back or carry passes; the tall kernel's scanChunked).
	for _, t := range [2]struct {
		k     *kernelRef
		g     *scanGeom
		tiles bool
	}{{p.trowK, p.trowG, true}, {p.tallK, p.tallG, false}} {
		if t.k == nil {
			continue
		}
		outer, inner := tallShape(p.shape, p.axis)
		if vec, ok := tallLayout(a, L, p.desc.Op, int64(p.desc.DType.Size()), outer, inner); ok {
			kf, err := dev.kernel(t.k)
			if err != nil {
				return pl, err
			}
			if kf.built {
				L.setGeom(t.g)
				L.vec = 0
				if vec {
					L.vec = 1
				}
				if t.tiles {
					p.scanTiles(&pl, t.k, t.g, int(t.g.smem))
				} else {
					p.scanChunked(&pl, t.k, t.g, int(t.g.smem))
				}
				return pl, nil
			}
		}
	}
	if p.stripK != nil {
		// The SM count alone rules out too few strips before the kernel
		// is loaded.
		if blocks, ok := stripLayout(a, L); ok && (p.stripAll || 4*blocks >= 3*int64(dev.SMs)) {
			kf, err := dev.kernel(p.stripK)
			if err != nil {
				return pl, err
			}
			if kf.built && kf.smemBlocks > 0 && blocks <= maxGridX &&
				(p.stripAll || stripFills(blocks, kf.sms, kf.smemBlocks)) {
				pl.add(p.stripK, scanMain, blocks, p.stripK.block, p.stripK.smem)
				return pl, nil
			}
		}
	}
	if p.pairK != nil && pairLayout(a, L) {
		kf, err := dev.kernel(p.pairK)
		if err != nil {
			return pl, err
		}
		if kf.built {
			L.setGeom(p.geom.pair)
			p.scanChunked(&pl, p.pairK, p.geom.pair, 0)
			return pl, nil
		}
	}
	p.scanChunked(&pl, p.kernel, &p.geom, 0)
	return pl, nil
}

// scanTiles adds the launches of the tallrow kernel k over geometry g:
// the carry passes where the plan takes them and g's slices are cut into
// tiles (scanCarried), else scanChunked's.
func (p *ScanBackward) scanTiles(pl *scanLaunchPlan, k *kernelRef, g *scanGeom, smem int) {
	if g.rowChunked() && scanCarryWanted(p.desc.Op, g.chunks, g.nslices, p.carryEnv) {
		p.scanCarried(pl, k, g, smem)
		return
	}
	p.scanChunked(pl, k, g, smem)
}

// scanCarried adds the carry passes' launches (gen/scan_carry.cuh): the
// two forward-state passes where the op has a forward state (as
// scanChunked), then the maps pass (a block per tile and batch: g's grid
// without its fill blocks), the prefix pass (a block per slice) and the
// main launch over the same tiles. No memset comes first: the blocks take
// their tiles by index, and every slot is written by the launch before
// the one that reads it.
func (p *ScanBackward) scanCarried(pl *scanLaunchPlan, k *kernelRef, g *scanGeom, smem int) {
	if g.passes(p.desc.Op) {
		p.fwdPasses(pl, k, g, smem)
	}
	tiles := g.grid - g.fillers
	pl.add(k, scanCarryMaps, tiles, scanBlock, smem)
	pl.add(k, scanCarryPrefix, g.nslices, scanBlock, smem)
	pl.add(k, scanCarryApply, tiles, scanBlock, smem)
}

// fwdPasses adds the two forward-state passes of a chunked row or tall
// launch: a block per tile, then the prefixes (a thread per slice, or a
// block per slice from scanPrefixWide tiles on).
func (p *ScanBackward) fwdPasses(pl *scanLaunchPlan, k *kernelRef, g *scanGeom, smem int) {
	prefixBlocks := scanCeil(g.nslices, scanBlock)
	if g.chunks >= scanPrefixWide {
		prefixBlocks = g.nslices
	}
	pl.add(k, scanFwdTiles, g.grid, scanBlock, smem)
	pl.add(k, scanFwdPrefix, prefixBlocks, scanBlock, smem)
}

// scanChunked adds the launches of kernel k over geometry g (blocks of
// scanBlock threads, smem bytes of shared memory each). A slice of one
// tile takes the main launch alone. Tiles chained through the workspace
// take first, in the row and tall mappings of an op with a forward state,
// the two forward-state passes (a block per tile, then the prefixes: a
// thread per slice, or a block per slice from scanPrefixWide tiles on),
// the first of which fills the look-back slots and resets the ticket
// counter (gen/scan_fwd.cuh, scan_fill_slots); otherwise the memset of
// the ticket counter, the main launch's fill blocks filling the slots
// (scan_take). The ext order of f64 adds its fix pass after the main
// launch, a warp per slice.
func (p *ScanBackward) scanChunked(pl *scanLaunchPlan, k *kernelRef, g *scanGeom, smem int) {
	if g.chunks > 1 {
		passes := g.passes(p.desc.Op)
		if !passes {
			pl.add(nil, 0, 0, 0, 0)
		}
		if g.ext && !g.fixIn {
			pl.add(k, scanMain, g.grid, scanBlock, smem)
			pl.add(k, scanExtFix, scanCeil(g.nslices, scanWarps), scanBlock, smem)
			return
		}
		if passes {
			p.fwdPasses(pl, k, g, smem)
		}
	}
	pl.add(k, scanMain, g.grid, scanBlock, smem)
}

// Launches reports the steps a Run of the plan takes for the operands a on
// a device with facts dev, in order: the kernel launches, with their
// grids, blocks, shared memory and passes, and the memset of the
// workspace's ticket counter where a Run makes one. It follows the policy
// Run follows (scanPolicy), so with DeviceFactsOf(ctx) it is exactly what
// a Run in ctx does with a (and like a Run it loads each kernel the choice
// reads in ctx); with facts filled by hand the kernels' occupancy is
// modelled (DeviceFacts). A nil a stands for contiguous operands at
// 16-byte aligned addresses. An empty tensor launches nothing (nil).
//
// The error is one of Check's for a, or the driver's from loading a
// kernel in the facts' context, or ErrUnsupportedDevice (package driver)
// for facts below compute capability 7.0.
func (p *ScanBackward) Launches(dev DeviceFacts, a *ScanArgs) ([]LaunchInfo, error) {
	if a == nil {
		t := Tensor{DType: p.desc.DType, Shape: p.shape}
		a = &ScanArgs{DY: t, X: t, Y: t, DX: t}
	} else if err := p.Check(a); err != nil {
		return nil, err
	}
	if p.numel == 0 {
		return nil, nil
	}
	var L scanLayout
	p.layout(a, &L, &p.geom)
	pl, err := p.scanPolicy(a, &L, &dev)
	if err != nil {
		return nil, err
	}
	out := make([]LaunchInfo, pl.n)
	for i, st := range pl.steps[:pl.n] {
		if st.k == nil {
			out[i] = LaunchInfo{Memset: scanCounter, MemsetByte: scanNoneByte}
			continue
		}
		out[i] = LaunchInfo{Kernel: st.k.name, Grid: st.grid, Block: st.block, SharedMem: st.smem, Phase: int(st.phase)}
	}
	return out, nil
}
