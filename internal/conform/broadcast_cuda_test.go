//go:build cuda

package conform

import (
	"testing"

	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/ops"
)

func TestBinaryBroadcastGPU(t *testing.T) {
	env := testEnv(t)
	cases := BroadcastCases(quick())
	for _, op := range ops.BinaryOps() {
		for _, dt := range dtype.All {
			t.Run("bcast_bw_"+op.String()+"_"+dt.Suffix(), func(t *testing.T) {
				report(t, env.CheckBinaryBroadcast(op, dt, cases, 41))
			})
		}
	}
}

// TestBinaryBroadcastTileKnobsGPU: the tile path at several prefetch
// distances (BARACUDA_BCAST_AHEAD: none, one, the default's neighbours,
// past every thread's packs) and tile counts (BARACUDA_BCAST_TILES: a few
// tiles, so that warps walk many rows and threads many packs), against
// the float64 reference.
func TestBinaryBroadcastTileKnobsGPU(t *testing.T) {
	env := testEnv(t)
	cases := BroadcastTileCases(quick())
	settings := []struct{ ahead, tiles string }{
		{"never", ""}, {"1", ""}, {"3", ""}, {"7", "3"}, {"40", "5"}, {"", "1"}, {"", "97"},
	}
	for _, st := range settings {
		t.Run("ahead="+st.ahead+",tiles="+st.tiles, func(t *testing.T) {
			t.Setenv("BARACUDA_BCAST_AHEAD", st.ahead)
			t.Setenv("BARACUDA_BCAST_TILES", st.tiles)
			for _, op := range []ops.BinaryOp{ops.BinaryMul, ops.BinaryAdd, ops.BinaryDiv, ops.BinaryMaximum, ops.BinaryPow} {
				for _, dt := range dtype.All {
					t.Run(op.String()+"_"+dt.Suffix(), func(t *testing.T) {
						report(t, env.CheckBinaryBroadcast(op, dt, cases, 43))
					})
				}
			}
		})
	}
}

// TestBinaryBroadcastAheadBitsGPU: the prefetches change no bits: every
// distance gives the bits of none at the same tiles.
func TestBinaryBroadcastAheadBitsGPU(t *testing.T) {
	env := testEnv(t)
	cases := BroadcastTileCases(quick())
	for _, tiles := range []string{"", "3"} {
		t.Setenv("BARACUDA_BCAST_TILES", tiles)
		for _, op := range []ops.BinaryOp{ops.BinaryMul, ops.BinaryMaximum} {
			for _, dt := range dtype.All {
				for ci, c := range cases {
					var base [2][]uint64
					for _, ahead := range []string{"never", "", "1", "7"} {
						t.Setenv("BARACUDA_BCAST_AHEAD", ahead)
						got, err := env.BroadcastBits(op, dt, c, 47)
						if err != nil {
							t.Fatalf("%s %s %v ahead=%q tiles=%q: %v", op, dt.Suffix(), c, ahead, tiles, err)
						}
						if ahead == "never" {
							base = got
							continue
						}
						for k := range got {
							for i := range got[k] {
								if got[k][i] != base[k][i] {
									t.Errorf("%s %s case %d %v ahead=%q tiles=%q: %s[%d] bits %#x, %#x without prefetch",
										op, dt.Suffix(), ci, c, ahead, tiles, [2]string{"da", "db"}[k], i, got[k][i], base[k][i])
									break
								}
							}
						}
					}
				}
			}
		}
	}
}
