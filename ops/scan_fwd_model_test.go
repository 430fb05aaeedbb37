package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A Go model of the col mapping's cumprod forward state in the main launch
// (gen/scan_fwd.cuh, scan_fwd_unit): which tiles' x it reads and the state
// it leaves before each tile, against the state of a walk over every x.

// fwdBits and fwdJoin are CumprodBw's state: 1 a zero came, 2 an x that is
// ±inf or NaN came, 4 one came after the first zero.
func fwdBits(x float32) uint {
	switch {
	case x == 0:
		return 1
	case math.IsInf(float64(x), 0) || x != x:
		return 2
	}
	return 0
}

func fwdJoin(a, b uint) uint { return a | b | ((a & (b >> 1) & 1) << 2) }

// fwdExact is the state before each tile (tile q covers [q*tile, q*tile+tile)
// of memory order; the scan runs backward with rev) from every x.
func fwdExact(x []float32, tile int, rev bool) []uint {
	n := len(x)
	chunks := (n + tile - 1) / tile
	st := make([]uint, chunks)
	f := uint(0)
	for i := 0; i < chunks; i++ {
		q := i
		if rev {
			q = chunks - 1 - i
		}
		st[q] = f
		f = fwdFold(f, x, q, tile, rev)
	}
	return st
}

// fwdFold joins the x of tile q, in scan order, onto the state f.
func fwdFold(f uint, x []float32, q, tile int, rev bool) uint {
	k0, k1 := q*tile, min(q*tile+tile, len(x))
	for j := 0; j < k1-k0; j++ {
		k := k0 + j
		if rev {
			k = k1 - 1 - j
		}
		f = fwdJoin(f, fwdBits(x[k]))
	}
	return f
}

// fwdUnit models scan_fwd_unit for one slice: need (the slice's last y is
// NaN or 0), the state before each tile, and how many tiles' x it read.
func fwdUnit(x, y []float32, tile int, rev bool) (need bool, st []uint, reads int) {
	n := len(x)
	chunks := (n + tile - 1) / tile
	isNaN := func(v float32) bool { return v != v }
	last := y[n-1]
	if rev {
		last = y[0]
	}
	if !isNaN(last) && last != 0 {
		return false, nil, 0
	}
	z := last == 0
	end := func(q int) float32 {
		if rev {
			return y[q*tile]
		}
		return y[min(q*tile+tile, n)-1]
	}
	before := func(q int) float32 {
		k0, k1 := q*tile, min(q*tile+tile, n)
		if rev {
			if k1 >= n {
				return 1
			}
			return y[k1]
		}
		if k0 == 0 {
			return 1
		}
		return y[k0-1]
	}
	fold := func(q int) uint {
		reads++
		return fwdFold(0, x, q, tile, rev)
	}
	buf := make([]uint, chunks)
	uf := false
	for q := range buf {
		e := end(q)
		rd := e == 0 || isNaN(e)
		if rd && z {
			rd = before(q) != 0
		}
		if rd {
			buf[q] = fold(q)
		}
		if rd && z && fwdJoin(buf[q], 1) != buf[q] {
			uf = true
		}
	}
	if uf {
		for q := range buf {
			if before(q) == 0 {
				buf[q] = fold(q)
			}
		}
	}
	// Exclusive prefixes in scan order.
	st = make([]uint, chunks)
	f := uint(0)
	for i := 0; i < chunks; i++ {
		q := i
		if rev {
			q = chunks - 1 - i
		}
		st[q] = f
		f = fwdJoin(f, buf[q])
	}
	return true, st, reads
}

// TestScanFwdUnitModel: for slices that end in a 0 y (zeros, underflows,
// an underflow then a zero) the unit's state before every tile is the
// walk's, and it reads one tile of x where a zero makes y 0; for slices
// that end in NaN it differs at most in bit 2 (a state's bit 2 enters no
// later bit: bit 4 takes a later part's); other slices leave the state
// unread.
func TestScanFwdUnitModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 39))
	const tile = 128
	// Slices ending in 0 where y becomes 0 at a zero, at an underflow with
	// a zero later, at an underflow with none; slices ending in NaN.
	var atZero, underZero, under, nanEnd int
	for it := 0; it < 3000; it++ {
		n := 1 + rng.IntN(3000)
		rev := rng.IntN(2) == 0
		x := make([]float32, n)
		kind := rng.IntN(6)
		// Kinds 3 to 5: |x| in [0.3, 0.45) from a random scan position on,
		// so that y underflows about 110 factors later (above 0.5 the least
		// subnormal times x rounds back to itself).
		small := n
		if kind >= 3 {
			small = rng.IntN(n)
		}
		for j := range x {
			k := j
			if rev {
				k = n - 1 - j
			}
			x[k] = 0.9 + 0.1*rng.Float32()
			if j >= small {
				x[k] = 0.3 + 0.15*rng.Float32()
			}
			if rng.IntN(2) == 0 {
				x[k] = -x[k]
			}
		}
		pos := func() int { return rng.IntN(n) }
		switch kind {
		case 1, 4:
			x[pos()] = 0
			if rng.IntN(3) == 0 {
				x[pos()] = 0
			}
		case 2, 5:
			x[pos()] = float32(math.Inf(1))
			if rng.IntN(2) == 0 {
				x[pos()] = 0
			}
			if rng.IntN(3) == 0 {
				x[pos()] = float32(math.NaN())
			}
		}
		y := make([]float32, n)
		p := float32(1)
		for j := 0; j < n; j++ {
			k := j
			if rev {
				k = n - 1 - j
			}
			p *= x[k]
			y[k] = p
		}
		last := y[n-1]
		if rev {
			last = y[0]
		}
		need, st, reads := fwdUnit(x, y, tile, rev)
		exact := fwdExact(x, tile, rev)
		switch {
		case last == 0:
			if !need {
				t.Fatalf("slice ending in 0: no state")
			}
			for q := range st {
				if st[q] != exact[q] {
					t.Fatalf("n=%d rev=%v kind=%d: state before tile %d = %d, want %d", n, rev, kind, q, st[q], exact[q])
				}
			}
			// A zero where y becomes 0: that tile's x alone.
			zeroFirst := false
			for j := 0; j < n; j++ {
				k := j
				if rev {
					k = n - 1 - j
				}
				if y[k] == 0 {
					zeroFirst = x[k] == 0
					break
				}
			}
			hasZero := false
			for _, v := range x {
				hasZero = hasZero || v == 0
			}
			switch {
			case zeroFirst:
				atZero++
			case hasZero:
				underZero++
			default:
				under++
			}
			if zeroFirst && reads != 1 {
				t.Fatalf("n=%d rev=%v: y becomes 0 at a zero, %d tiles read, want 1", n, rev, reads)
			}
		case last != last:
			nanEnd++
			for q := range st {
				if st[q]&^2 != exact[q]&^2 {
					t.Fatalf("n=%d rev=%v kind=%d (NaN end): state before tile %d = %d, want %d", n, rev, kind, q, st[q], exact[q])
				}
			}
		default:
			if need {
				t.Fatalf("slice ending in %v: state computed", last)
			}
		}
	}
	if atZero < 100 || underZero < 100 || under < 100 || nanEnd < 100 {
		t.Errorf("classes: %d at a zero, %d underflow then a zero, %d underflow alone, %d NaN end; want 100 each",
			atZero, underZero, under, nanEnd)
	}
}
