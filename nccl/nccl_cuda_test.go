//go:build cuda

package nccl_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/nccl"
)

// The GPU tests need two GPUs and an NCCL library; they skip without them.
// BARACUDA_NCCL_LIBRARY points at the library if it is not found by
// itself (see nccl.SearchPaths). BARACUDA_HUGE=1 adds an all-reduce of
// more than 2^31 bytes (2 GiB per GPU).

func TestMain(m *testing.M) {
	// NVLink multicast (NVLS) can take a shared host's GPUs out of service
	// when a program using it dies; the tests keep it off unless told.
	if _, ok := os.LookupEnv("NCCL_NVLS_ENABLE"); !ok {
		os.Setenv("NCCL_NVLS_ENABLE", "0")
	}
	if role := os.Getenv(envChild); role != "" {
		os.Exit(childMain(role))
	}
	os.Exit(m.Run())
}

// sizes hit the tails of NCCL's chunking: empty, one element, odd counts,
// and more than one chunk.
var sizes = []int{0, 1, 2, 31, 1023, 1025, 65537, 1<<20 + 3}

// rankGPU is one rank of the single-process communicator with its stream.
type rankGPU struct {
	comm   *nccl.Comm
	ctx    *driver.Context
	stream *driver.Stream
}

// needGPUs returns the driver's device count, skipping the test without
// two GPUs or without NCCL.
func needGPUs(t *testing.T) int {
	t.Helper()
	n, err := driver.DeviceCount()
	if errors.Is(err, driver.ErrNoDriver) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Skipf("%d GPU visible; the NCCL tests need 2", n)
	}
	if err := nccl.Load(); errors.Is(err, nccl.ErrNoNCCL) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	return n
}

var (
	commsOnce sync.Once
	commsErr  error
	theRanks  []*rankGPU
)

// ranks returns a communicator over GPUs 0 and 1 made once by InitAll,
// each rank with a stream of its own.
func ranks(t *testing.T) []*rankGPU {
	t.Helper()
	needGPUs(t)
	commsOnce.Do(func() {
		comms, err := nccl.InitAll([]int{0, 1})
		if err != nil {
			commsErr = err
			return
		}
		for _, c := range comms {
			s, err := c.Context().NewStream()
			if err != nil {
				commsErr = err
				return
			}
			theRanks = append(theRanks, &rankGPU{comm: c, ctx: c.Context(), stream: s})
		}
	})
	if commsErr != nil {
		t.Fatal(commsErr)
	}
	return theRanks
}

func TestInitAll(t *testing.T) {
	rs := ranks(t)
	v, _ := nccl.Version()
	path, _ := nccl.LibraryPath()
	t.Logf("NCCL %s from %s", nccl.FormatVersion(v), path)
	for i, r := range rs {
		if r.comm.Rank() != i || r.comm.Count() != 2 || r.comm.Device() != i {
			t.Errorf("comm %d: rank %d of %d on device %d, want rank %d of 2 on device %d",
				i, r.comm.Rank(), r.comm.Count(), r.comm.Device(), i, i)
		}
		if err := r.comm.AsyncError(); err != nil {
			t.Errorf("comm %d: AsyncError: %v", i, err)
		}
	}
}

func TestAllReduce(t *testing.T) {
	rs := ranks(t)
	for _, dt := range dtype.All {
		for _, op := range nccl.Ops {
			for _, n := range sizes {
				t.Run(fmt.Sprintf("%s/%s/n%d", dt, op, n), func(t *testing.T) {
					send := make([]*devBuf, len(rs))
					recv := make([]*devBuf, len(rs))
					for r, g := range rs {
						send[r] = newDevBuf(t, g.ctx, dt, n)
						send[r].fill(t, vals(n, func(i int) float64 { return input(op, r, i) }))
						recv[r] = newDevBuf(t, g.ctx, dt, n)
					}
					group(t, rs, func(r int, g *rankGPU) error {
						return g.comm.AllReduce(send[r].view, recv[r].view, n, dt, op, g.stream)
					})
					for r := range rs {
						compare(t, recv[r].read(t), func(i int) float64 { return reduced(op, len(rs), i) })
					}
				})
			}
		}
	}
}

func TestReduce(t *testing.T) {
	rs := ranks(t)
	const root = 1
	for _, dt := range dtype.All {
		for _, op := range nccl.Ops {
			for _, n := range sizes {
				t.Run(fmt.Sprintf("%s/%s/n%d", dt, op, n), func(t *testing.T) {
					send := make([]*devBuf, len(rs))
					recv := newDevBuf(t, rs[root].ctx, dt, n)
					for r, g := range rs {
						send[r] = newDevBuf(t, g.ctx, dt, n)
						send[r].fill(t, vals(n, func(i int) float64 { return input(op, r, i) }))
					}
					group(t, rs, func(r int, g *rankGPU) error {
						out := driver.Buffer{} // only root's recv is written
						if r == root {
							out = recv.view
						}
						return g.comm.Reduce(send[r].view, out, n, dt, op, root, g.stream)
					})
					compare(t, recv.read(t), func(i int) float64 { return reduced(op, len(rs), i) })
				})
			}
		}
	}
}

func TestBroadcast(t *testing.T) {
	rs := ranks(t)
	for _, dt := range dtype.All {
		for _, root := range []int{0, 1} {
			for _, n := range sizes {
				t.Run(fmt.Sprintf("%s/root%d/n%d", dt, root, n), func(t *testing.T) {
					send := newDevBuf(t, rs[root].ctx, dt, n)
					send.fill(t, vals(n, func(i int) float64 { return value(root, i) }))
					recv := make([]*devBuf, len(rs))
					for r, g := range rs {
						recv[r] = newDevBuf(t, g.ctx, dt, n)
					}
					group(t, rs, func(r int, g *rankGPU) error {
						in := driver.Buffer{} // only root's send is read
						if r == root {
							in = send.view
						}
						return g.comm.Broadcast(in, recv[r].view, n, dt, root, g.stream)
					})
					for r := range rs {
						compare(t, recv[r].read(t), func(i int) float64 { return value(root, i) })
					}
				})
			}
		}
	}
}

func TestAllGather(t *testing.T) {
	rs := ranks(t)
	for _, dt := range dtype.All {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/n%d", dt, n), func(t *testing.T) {
				send := make([]*devBuf, len(rs))
				recv := make([]*devBuf, len(rs))
				for r, g := range rs {
					send[r] = newDevBuf(t, g.ctx, dt, n)
					send[r].fill(t, vals(n, func(i int) float64 { return value(r, i) }))
					recv[r] = newDevBuf(t, g.ctx, dt, len(rs)*n)
				}
				group(t, rs, func(r int, g *rankGPU) error {
					return g.comm.AllGather(send[r].view, recv[r].view, n, dt, g.stream)
				})
				for r := range rs {
					compare(t, recv[r].read(t), func(i int) float64 { return value(i/n, i%n) })
				}
			})
		}
	}
}

func TestReduceScatter(t *testing.T) {
	rs := ranks(t)
	for _, dt := range dtype.All {
		for _, op := range nccl.Ops {
			for _, n := range sizes {
				t.Run(fmt.Sprintf("%s/%s/n%d", dt, op, n), func(t *testing.T) {
					send := make([]*devBuf, len(rs))
					recv := make([]*devBuf, len(rs))
					for r, g := range rs {
						send[r] = newDevBuf(t, g.ctx, dt, len(rs)*n)
						send[r].fill(t, vals(len(rs)*n, func(i int) float64 { return input(op, r, i) }))
						recv[r] = newDevBuf(t, g.ctx, dt, n)
					}
					group(t, rs, func(r int, g *rankGPU) error {
						return g.comm.ReduceScatter(send[r].view, recv[r].view, n, dt, op, g.stream)
					})
					for r := range rs {
						compare(t, recv[r].read(t), func(i int) float64 { return reduced(op, len(rs), r*n+i) })
					}
				})
			}
		}
	}
}

// TestInPlace runs the in-place form of each collective that has one.
func TestInPlace(t *testing.T) {
	rs := ranks(t)
	const n = 4099
	dt := dtype.BF16
	size := int64(dt.Size())
	t.Run("AllReduce", func(t *testing.T) {
		bufs := make([]*devBuf, len(rs))
		for r, g := range rs {
			bufs[r] = newDevBuf(t, g.ctx, dt, n)
			bufs[r].fill(t, vals(n, func(i int) float64 { return value(r, i) }))
		}
		group(t, rs, func(r int, g *rankGPU) error {
			return g.comm.AllReduce(bufs[r].view, bufs[r].view, n, dt, nccl.Sum, g.stream)
		})
		for r := range rs {
			compare(t, bufs[r].read(t), func(i int) float64 { return reduced(nccl.Sum, len(rs), i) })
		}
	})
	t.Run("AllGather", func(t *testing.T) {
		bufs := make([]*devBuf, len(rs))
		for r, g := range rs {
			bufs[r] = newDevBuf(t, g.ctx, dt, len(rs)*n)
			bufs[r].fill(t, vals(len(rs)*n, func(i int) float64 {
				if i/n == r {
					return value(r, i%n)
				}
				return 99 // overwritten by the other ranks' parts
			}))
		}
		group(t, rs, func(r int, g *rankGPU) error {
			mine := bufs[r].view.Slice(int64(r)*n*size, n*size)
			return g.comm.AllGather(mine, bufs[r].view, n, dt, g.stream)
		})
		for r := range rs {
			compare(t, bufs[r].read(t), func(i int) float64 { return value(i/n, i%n) })
		}
	})
	t.Run("ReduceScatter", func(t *testing.T) {
		bufs := make([]*devBuf, len(rs))
		for r, g := range rs {
			bufs[r] = newDevBuf(t, g.ctx, dt, len(rs)*n)
			bufs[r].fill(t, vals(len(rs)*n, func(i int) float64 { return value(r, i) }))
		}
		group(t, rs, func(r int, g *rankGPU) error {
			mine := bufs[r].view.Slice(int64(r)*n*size, n*size)
			return g.comm.ReduceScatter(bufs[r].view, mine, n, dt, nccl.Max, g.stream)
		})
		for r := range rs {
			got := bufs[r].read(t)[r*n : (r+1)*n]
			compare(t, got, func(i int) float64 { return reduced(nccl.Max, len(rs), r*n+i) })
		}
	})
}

// TestNoAllocs checks that a warm collective makes no Go heap allocations.
func TestNoAllocs(t *testing.T) {
	rs := ranks(t)
	const n = 1 << 16
	bufs := make([]*devBuf, len(rs))
	for r, g := range rs {
		bufs[r] = newDevBuf(t, g.ctx, dtype.F32, n)
		bufs[r].fill(t, make([]float64, n))
	}
	step := func() {
		if err := nccl.GroupStart(); err != nil {
			t.Fatal(err)
		}
		for r, g := range rs {
			if err := g.comm.AllReduce(bufs[r].view, bufs[r].view, n, dtype.F32, nccl.Sum, g.stream); err != nil {
				t.Fatal(err)
			}
		}
		if err := nccl.GroupEnd(); err != nil {
			t.Fatal(err)
		}
	}
	step() // warm: NCCL connects the ranks on first use
	if a := testing.AllocsPerRun(200, step); a != 0 {
		t.Errorf("GroupStart, 2 x AllReduce, GroupEnd: %v allocations per call, want 0", a)
	}
	for _, g := range rs {
		if err := g.stream.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestInitRankGoroutines makes a second communicator over both GPUs with
// InitRank, one goroutine per rank, and all-reduces on it.
func TestInitRankGoroutines(t *testing.T) {
	rs := ranks(t)
	id, err := nccl.NewUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	comms := make([]*nccl.Comm, len(rs))
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for r, g := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comms[r], errs[r] = nccl.InitRank(g.ctx, len(rs), r, id)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range comms {
			if err := c.Destroy(); err != nil {
				t.Error(err)
			}
		}
	}()
	const n = 1001
	bufs := make([]*devBuf, len(rs))
	for r, g := range rs {
		if comms[r].Rank() != r || comms[r].Count() != len(rs) || comms[r].Device() != r {
			t.Errorf("InitRank %d: rank %d of %d on device %d", r, comms[r].Rank(), comms[r].Count(), comms[r].Device())
		}
		bufs[r] = newDevBuf(t, g.ctx, dtype.F64, n)
		bufs[r].fill(t, vals(n, func(i int) float64 { return value(r, i) }))
	}
	// One goroutine per rank, no group: each call waits for its peer.
	for r, g := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = comms[r].AllReduce(bufs[r].view, bufs[r].view, n, dtype.F64, nccl.Min, g.stream)
			if errs[r] == nil {
				errs[r] = g.stream.Synchronize()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r := range rs {
		compare(t, bufs[r].read(t), func(i int) float64 { return reduced(nccl.Min, len(rs), i) })
	}
}

// TestBadArguments checks the named errors of arguments a GPU is needed
// to make (streams of the wrong context, a destroyed stream).
func TestBadArguments(t *testing.T) {
	rs := ranks(t)
	b0 := newDevBuf(t, rs[0].ctx, dtype.F32, 16)
	c0 := rs[0].comm
	err := c0.AllReduce(b0.view, b0.view, 16, dtype.F32, nccl.Sum, rs[1].stream)
	if !errors.Is(err, nccl.ErrStream) || !strings.Contains(err.Error(), "stream belongs to device 1's context; rank 0 works on device 0") {
		t.Errorf("stream of GPU 1 on rank 0: %v", err)
	}
	s, err := rs[0].ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	s.Destroy()
	if err := c0.AllReduce(b0.view, b0.view, 16, dtype.F32, nccl.Sum, s); !errors.Is(err, nccl.ErrStream) {
		t.Errorf("destroyed stream: %v", err)
	}
	if err := c0.AllReduce(b0.view, b0.view, 17, dtype.F32, nccl.Sum, rs[0].stream); !errors.Is(err, nccl.ErrBufferTooSmall) {
		t.Errorf("17 elements of a 16-element buffer: %v", err)
	}
	if err := c0.Broadcast(b0.view, b0.view, 16, dtype.F32, 2, rs[0].stream); !errors.Is(err, nccl.ErrRank) {
		t.Errorf("root 2 of 2 ranks: %v", err)
	}
	if _, err := nccl.InitAll([]int{0, 0}); !errors.Is(err, nccl.ErrContext) {
		t.Errorf("InitAll(0, 0): %v", err)
	}
	// No call was queued: the communicator is still healthy.
	if err := c0.AsyncError(); err != nil {
		t.Errorf("AsyncError after refused calls: %v", err)
	}
}

// TestHugeAllReduce all-reduces more than 2^31 bytes of f32 in place
// (BARACUDA_HUGE=1; 2 GiB per GPU).
func TestHugeAllReduce(t *testing.T) {
	if os.Getenv("BARACUDA_HUGE") != "1" {
		t.Skip("set BARACUDA_HUGE=1 to all-reduce 2^29+7 f32 elements (2 GiB per GPU)")
	}
	rs := ranks(t)
	const n = 1<<29 + 7
	f32 := dtype.F32
	bufs := make([]*devBuf, len(rs))
	for r, g := range rs {
		bufs[r] = newDevBuf(t, g.ctx, f32, n)
		host := make([]float32, n)
		for i := range host {
			host[i] = float32(value(r, i))
		}
		if err := driver.CopyToDevice(g.ctx, bufs[r].view, host); err != nil {
			t.Fatal(err)
		}
	}
	group(t, rs, func(r int, g *rankGPU) error {
		return g.comm.AllReduce(bufs[r].view, bufs[r].view, n, f32, nccl.Sum, g.stream)
	})
	for r, g := range rs {
		host := make([]float32, n)
		if err := driver.CopyFromDevice(g.ctx, host, bufs[r].view); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, v := range host {
			if want := float32(reduced(nccl.Sum, len(rs), i)); v != want {
				if bad < 5 {
					t.Errorf("rank %d element %d = %v, want %v", r, i, v, want)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("rank %d: %d of %d elements wrong", r, bad, n)
		}
	}
}
