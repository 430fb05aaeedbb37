package ops

// The carry passes (gen/scan_carry.cuh): a chunked tallrow launch can
// give its tiles their carries by two launches before the main one (each
// tile's map, then each slice's prefix of them) instead of the look-back,
// so that no tile waits on another. The maps pass reads the operands once
// more; what it saves is the look-back's wait, which grows with the tiles
// each slice chains: over a few long slices the tiles of one slice run at
// once, and each waits on the ones before it. The tallrow kernel's
// look-back waits longest (warp 0 chains all its columns at once); the row
// and tall kernels' look-back is faster than the passes' extra read, and
// they keep it (docs/variants.md).

// scanCarryEnv, read when a plan is made, overrides where Run takes the
// carry passes: "never" keeps every launch on the look-back, "always"
// takes the carry passes for every chunked tallrow launch,
// whatever the op and the tile count. It is a kernel developer's knob (to
// time or test one form against the other); users leave it unset.
const scanCarryEnv = "BARACUDA_SCAN_CARRY"

// scanCarryMinChunks and scanCarryMaxSlices bound the default policy:
// at least this many tiles a slice, over at most this many slices. The
// look-back's wait grows with the tiles of one slice that run at once;
// over many slices a wave of blocks holds fewer tiles of each, and their
// chains overlap.
const (
	scanCarryMinChunks = scanPrefixWide
	scanCarryMaxSlices = 16
)

// scanCarryWanted is the policy: whether a chunked tallrow launch of
// chunks tiles a slice over nslices slices takes the carry
// passes (env is scanCarryEnv's value). By default an op without a
// forward state (cumsum, logcumsumexp) takes them within the bounds
// above; an op with one would read x a third time.
func scanCarryWanted(op ScanOp, chunks, nslices int64, env string) bool {
	switch env {
	case "never":
		return false
	case "always":
		return true
	}
	return !op.forwardState() && chunks >= scanCarryMinChunks && nslices <= scanCarryMaxSlices
}
