//go:build cuda

package nccl_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/nccl"
)

// The test binary re-executes itself as a child process when envChild is
// set: "rank" joins a communicator as rank BARACUDA_NCCL_RANK of
// BARACUDA_NCCL_NRANKS, exchanging the unique id through the file
// BARACUDA_NCCL_ID_FILE; "missing" checks the error of a library that is
// not there.
const (
	envChild  = "BARACUDA_NCCL_CHILD"
	envRank   = "BARACUDA_NCCL_RANK"
	envNRanks = "BARACUDA_NCCL_NRANKS"
	envIDFile = "BARACUDA_NCCL_ID_FILE"
)

// spawn runs the test binary as a child with the extra environment and
// returns its output.
func spawn(ctx context.Context, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

func TestTwoProcesses(t *testing.T) {
	needGPUs(t)
	idFile := filepath.Join(t.TempDir(), "nccl-id")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	type result struct {
		out []byte
		err error
	}
	results := make([]chan result, 2)
	for r := range results {
		results[r] = make(chan result, 1)
		cmd := spawn(ctx, envChild+"=rank", envRank+"="+strconv.Itoa(r), envNRanks+"=2", envIDFile+"="+idFile)
		go func() {
			out, err := cmd.CombinedOutput()
			results[r] <- result{out, err}
		}()
	}
	for r, ch := range results {
		res := <-ch
		t.Logf("rank %d:\n%s", r, res.out)
		if res.err != nil {
			t.Errorf("rank %d process: %v", r, res.err)
		}
	}
}

func TestMissingLibrary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := spawn(ctx, envChild+"=missing", nccl.EnvLibrary+"=/nonexistent/libnccl.so.2").CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Errorf("child with a bogus %s: %v", nccl.EnvLibrary, err)
	}
}

func childMain(role string) int {
	var err error
	switch role {
	case "rank":
		err = childRank()
	case "missing":
		err = childMissing()
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Println("FAIL:", err)
		return 1
	}
	fmt.Println("ok")
	return 0
}

func childMissing() error {
	err := nccl.Load()
	fmt.Println("Load:", err)
	if !errors.Is(err, nccl.ErrNoNCCL) {
		return fmt.Errorf("Load with a bogus library path: %v, want ErrNoNCCL", err)
	}
	if _, err := nccl.InitAll(nil); !errors.Is(err, nccl.ErrNoNCCL) {
		return fmt.Errorf("InitAll: %v, want ErrNoNCCL", err)
	}
	if _, err := nccl.NewUniqueID(); !errors.Is(err, nccl.ErrNoNCCL) {
		return fmt.Errorf("NewUniqueID: %v, want ErrNoNCCL", err)
	}
	return nil
}

// childRank is one rank of the two-process test: every collective, every
// dtype, sizes with tails, checked against the values every rank can
// compute for every other.
func childRank() error {
	rank, _ := strconv.Atoi(os.Getenv(envRank))
	nranks, _ := strconv.Atoi(os.Getenv(envNRanks))
	id, err := nccl.ShareUniqueIDFile(rank, os.Getenv(envIDFile), 2*time.Minute)
	if err != nil {
		return err
	}
	dev, err := driver.GetDevice(rank)
	if err != nil {
		return err
	}
	ctx, err := dev.Context()
	if err != nil {
		return err
	}
	comm, err := nccl.InitRank(ctx, nranks, rank, id)
	if err != nil {
		return err
	}
	defer comm.Destroy()
	if comm.Rank() != rank || comm.Count() != nranks || comm.Device() != rank {
		return fmt.Errorf("rank %d of %d on device %d, want rank %d of %d on device %d",
			comm.Rank(), comm.Count(), comm.Device(), rank, nranks, rank)
	}
	s, err := ctx.NewStream()
	if err != nil {
		return err
	}
	defer s.Destroy()
	p := &proc{ctx: ctx, s: s, comm: comm, rank: rank, nranks: nranks}
	cases := 0
	for _, dt := range dtype.All {
		for _, n := range []int{0, 1, 31, 1025, 65537} {
			for _, op := range nccl.Ops {
				if err := p.allReduce(dt, op, n); err != nil {
					return err
				}
				if err := p.reduceScatter(dt, op, n); err != nil {
					return err
				}
				if err := p.reduce(dt, op, n, 1); err != nil {
					return err
				}
				cases += 3
			}
			if err := p.broadcast(dt, n, 1); err != nil {
				return err
			}
			if err := p.allGather(dt, n); err != nil {
				return err
			}
			cases += 2
		}
	}
	if err := comm.AsyncError(); err != nil {
		return err
	}
	fmt.Printf("rank %d of %d on device %d: %d collectives checked\n", rank, nranks, comm.Device(), cases)
	return nil
}

// proc is the state of one child rank.
type proc struct {
	ctx          *driver.Context
	s            *driver.Stream
	comm         *nccl.Comm
	rank, nranks int
}

func (p *proc) upload(dt dtype.DType, n int, f func(i int) float64) (driver.Buffer, error) {
	b, err := p.ctx.Alloc(int64(n * dt.Size()))
	if err != nil || n == 0 {
		return b, err
	}
	return b, p.ctx.CopyHtoD(b, dtype.Encode(dt, vals(n, f)))
}

// finish waits for the stream, reads out (n elements), frees the buffers
// and compares.
func (p *proc) finish(what string, dt dtype.DType, out driver.Buffer, n int, want func(i int) float64, bufs ...driver.Buffer) error {
	defer func() {
		for _, b := range bufs {
			p.ctx.Free(b)
		}
	}()
	if err := p.s.Synchronize(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n == 0 {
		return nil
	}
	raw := make([]byte, n*dt.Size())
	if err := p.ctx.CopyDtoH(raw, out); err != nil {
		return err
	}
	for i, g := range dtype.Decode(dt, raw) {
		if w := want(i); g != w {
			return fmt.Errorf("%s: rank %d element %d = %v, want %v", what, p.rank, i, g, w)
		}
	}
	return nil
}

func (p *proc) allReduce(dt dtype.DType, op nccl.Op, n int) error {
	what := fmt.Sprintf("AllReduce(%s, %s, %d)", dt, op, n)
	send, err := p.upload(dt, n, func(i int) float64 { return input(op, p.rank, i) })
	if err != nil {
		return err
	}
	recv, err := p.ctx.Alloc(int64(n * dt.Size()))
	if err != nil {
		return err
	}
	if err := p.comm.AllReduce(send, recv, n, dt, op, p.s); err != nil {
		return err
	}
	return p.finish(what, dt, recv, n, func(i int) float64 { return reduced(op, p.nranks, i) }, send, recv)
}

func (p *proc) reduceScatter(dt dtype.DType, op nccl.Op, n int) error {
	what := fmt.Sprintf("ReduceScatter(%s, %s, %d)", dt, op, n)
	send, err := p.upload(dt, p.nranks*n, func(i int) float64 { return input(op, p.rank, i) })
	if err != nil {
		return err
	}
	recv, err := p.ctx.Alloc(int64(n * dt.Size()))
	if err != nil {
		return err
	}
	if err := p.comm.ReduceScatter(send, recv, n, dt, op, p.s); err != nil {
		return err
	}
	return p.finish(what, dt, recv, n, func(i int) float64 { return reduced(op, p.nranks, p.rank*n+i) }, send, recv)
}

func (p *proc) reduce(dt dtype.DType, op nccl.Op, n, root int) error {
	what := fmt.Sprintf("Reduce(%s, %s, %d, root %d)", dt, op, n, root)
	send, err := p.upload(dt, n, func(i int) float64 { return input(op, p.rank, i) })
	if err != nil {
		return err
	}
	var recv driver.Buffer
	if p.rank == root {
		if recv, err = p.ctx.Alloc(int64(n * dt.Size())); err != nil {
			return err
		}
	}
	if err := p.comm.Reduce(send, recv, n, dt, op, root, p.s); err != nil {
		return err
	}
	if p.rank != root {
		return p.finish(what, dt, recv, 0, nil, send)
	}
	return p.finish(what, dt, recv, n, func(i int) float64 { return reduced(op, p.nranks, i) }, send, recv)
}

func (p *proc) broadcast(dt dtype.DType, n, root int) error {
	what := fmt.Sprintf("Broadcast(%s, %d, root %d)", dt, n, root)
	var send driver.Buffer
	var err error
	if p.rank == root {
		if send, err = p.upload(dt, n, func(i int) float64 { return value(root, i) }); err != nil {
			return err
		}
	}
	recv, err := p.ctx.Alloc(int64(n * dt.Size()))
	if err != nil {
		return err
	}
	if err := p.comm.Broadcast(send, recv, n, dt, root, p.s); err != nil {
		return err
	}
	return p.finish(what, dt, recv, n, func(i int) float64 { return value(root, i) }, send, recv)
}

func (p *proc) allGather(dt dtype.DType, n int) error {
	what := fmt.Sprintf("AllGather(%s, %d)", dt, n)
	send, err := p.upload(dt, n, func(i int) float64 { return value(p.rank, i) })
	if err != nil {
		return err
	}
	recv, err := p.ctx.Alloc(int64(p.nranks * n * dt.Size()))
	if err != nil {
		return err
	}
	if err := p.comm.AllGather(send, recv, n, dt, p.s); err != nil {
		return err
	}
	return p.finish(what, dt, recv, p.nranks*n, func(i int) float64 { return value(i/n, i%n) }, send, recv)
}
