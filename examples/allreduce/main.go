// Command allreduce is data-parallel training's gradient step on the GPUs
// of one machine: every GPU runs a backward plan on its own shard of a
// batch, then NCCL sums the gradients across GPUs (all-reduce), and the sum
// is checked against the gradient of the whole batch computed on one GPU.
//
// The model multiplies each sequence x (shape [T, D]) of the batch by a
// learned table P of the same shape, y = x*P elementwise, as a position-wise
// scale does. The gradient of P over a batch is the sum over its sequences
// of dy*x (binary mul's backward, db). With N GPUs the batch is N
// sequences, one per GPU: GPU g computes its sequence's gradient with
// ops.BinaryBackward, and an in-place nccl AllReduce (sum) leaves the
// batch's gradient on every GPU, ready for the optimizer step. GPU 0 then
// computes the same gradient from the whole batch at once (P broadcast over
// the batch axis by a stride of 0, the per-sequence gradients summed on
// the host in float64), and the program reports the largest difference
// against the dtype's tolerance.
//
//	go run ./examples/allreduce                 # every visible GPU, f32
//	go run ./examples/allreduce -dtype bf16 -gpus 2 -t 256 -d 4096
//
// It needs NVIDIA GPUs, their driver and NCCL (libnccl.so.2; see package
// nccl for where it is looked for). It keeps NVLink multicast off
// (NCCL_NVLS_ENABLE=0) unless that variable is set.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/nccl"
	"github.com/baracuda-go/baracuda/ops"
)

func main() {
	dtName := flag.String("dtype", "f32", "element type: f32, f16, bf16 or f64")
	gpus := flag.Int("gpus", 0, "how many GPUs (0: every visible one)")
	T := flag.Int("t", 512, "sequence length T")
	D := flag.Int("d", 1024, "features D")
	flag.Parse()
	if _, ok := os.LookupEnv("NCCL_NVLS_ENABLE"); !ok {
		os.Setenv("NCCL_NVLS_ENABLE", "0")
	}
	err := run(*dtName, *gpus, *T, *D)
	if err != nil {
		fmt.Fprintln(os.Stderr, "allreduce:", err)
		switch {
		case errors.Is(err, driver.ErrNoDriver):
			fmt.Fprintln(os.Stderr, "(this example needs NVIDIA GPUs and their driver)")
		case errors.Is(err, nccl.ErrNoNCCL):
			fmt.Fprintf(os.Stderr, "(this example needs NCCL: install it, or set %s to libnccl.so.2)\n", nccl.EnvLibrary)
		}
		os.Exit(1)
	}
}

// rank is one GPU's share of the work.
type rank struct {
	comm   *nccl.Comm
	ctx    *driver.Context
	stream *driver.Stream
	bufs   []driver.Buffer
}

func (r *rank) upload(dt dtype.DType, vals []float64) (driver.Buffer, error) {
	buf, err := r.alloc(dt, len(vals))
	if err != nil {
		return buf, err
	}
	return buf, r.ctx.CopyHtoD(buf, dtype.Encode(dt, vals))
}

func (r *rank) alloc(dt dtype.DType, n int) (driver.Buffer, error) {
	buf, err := r.ctx.Alloc(int64(n * dt.Size()))
	if err == nil {
		r.bufs = append(r.bufs, buf)
	}
	return buf, err
}

func (r *rank) read(dt dtype.DType, buf driver.Buffer, n int) ([]float64, error) {
	raw := make([]byte, n*dt.Size())
	if err := r.ctx.CopyDtoH(raw, buf); err != nil {
		return nil, err
	}
	return dtype.Decode(dt, raw), nil
}

func (r *rank) free() {
	for _, b := range r.bufs {
		r.ctx.Free(b)
	}
	r.stream.Destroy()
	r.comm.Destroy()
}

// normals returns n draws of N(0,1) rounded to dt, as the GPU holds them.
func normals(rng *rand.Rand, dt dtype.DType, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return dtype.Decode(dt, dtype.Encode(dt, v))
}

func run(dtName string, gpus, T, D int) error {
	dt, err := dtype.Parse(dtName)
	if err != nil {
		return err
	}
	count, err := driver.DeviceCount()
	if err != nil {
		return err
	}
	if gpus <= 0 || gpus > count {
		gpus = count
	}
	ordinals := make([]int, gpus)
	for i := range ordinals {
		ordinals[i] = i
	}
	comms, err := nccl.InitAll(ordinals)
	if err != nil {
		return err
	}
	ranks := make([]*rank, gpus)
	for g, c := range comms {
		s, err := c.Context().NewStream()
		if err != nil {
			return err
		}
		ranks[g] = &rank{comm: c, ctx: c.Context(), stream: s}
		defer ranks[g].free()
	}
	v, _ := nccl.Version()
	fmt.Printf("NCCL %s, %d GPU(s), %s, P of shape [%d %d], a batch of %d sequences (one per GPU)\n",
		nccl.FormatVersion(v), gpus, dt, T, D, gpus)

	// The batch: sequence g's x and upstream gradient dy, and the table P.
	n := T * D
	rng := rand.New(rand.NewPCG(42, 1))
	p := normals(rng, dt, n)
	xs := make([][]float64, gpus)
	dys := make([][]float64, gpus)
	for g := range xs {
		xs[g], dys[g] = normals(rng, dt, n), normals(rng, dt, n)
	}

	// Each GPU: db = dy*x for its sequence, then the all-reduce.
	plan, err := ops.NewBinaryBackward(ops.BinaryDesc{Op: ops.BinaryMul, DType: dt, Shape: []int{T, D}})
	if err != nil {
		return err
	}
	grads := make([]driver.Buffer, gpus)
	for g, r := range ranks {
		x, err := r.upload(dt, xs[g])
		if err != nil {
			return err
		}
		dy, err := r.upload(dt, dys[g])
		if err != nil {
			return err
		}
		bp, err := r.upload(dt, p)
		if err != nil {
			return err
		}
		if grads[g], err = r.alloc(dt, n); err != nil {
			return err
		}
		args := &ops.BinaryArgs{
			DY: ops.NewTensor(dy, dt, T, D), A: ops.NewTensor(x, dt, T, D), B: ops.NewTensor(bp, dt, T, D),
			DB: ops.NewTensor(grads[g], dt, T, D),
		}
		if err := plan.Run(r.stream, args); err != nil {
			return fmt.Errorf("GPU %d: %w", g, err)
		}
	}
	// One goroutine drives every GPU, so the all-reduces form one group.
	if err := nccl.GroupStart(); err != nil {
		return err
	}
	for g, r := range ranks {
		if err := r.comm.AllReduce(grads[g], grads[g], n, dt, nccl.Sum, r.stream); err != nil {
			nccl.GroupEnd()
			return fmt.Errorf("GPU %d: %w", g, err)
		}
	}
	if err := nccl.GroupEnd(); err != nil {
		return err
	}
	for g, r := range ranks {
		if err := r.stream.Synchronize(); err != nil {
			return fmt.Errorf("GPU %d: %w", g, err)
		}
		if err := r.comm.AsyncError(); err != nil {
			return err
		}
	}

	want, scale, err := wholeBatch(ranks[0], dt, p, xs, dys, T, D)
	if err != nil {
		return err
	}
	// NCCL adds the gpus partial gradients in dt, rounding after each
	// addition; each per-sequence gradient is itself rounded to dt once.
	tol := float64(gpus+1) * dtype.Epsilon(dt)
	pass := true
	for g, r := range ranks {
		got, err := r.read(dt, grads[g], n)
		if err != nil {
			return err
		}
		worst, at := 0.0, 0
		for i := range got {
			if d := math.Abs(got[i]-want[i]) / math.Max(scale[i], math.SmallestNonzeroFloat64); d > worst || math.IsNaN(d) {
				worst, at = d, i
			}
		}
		ok := worst <= tol
		pass = pass && ok
		verdict := "ok"
		if !ok {
			verdict = "FAIL"
		}
		fmt.Printf("GPU %d: all-reduced gradient vs the whole batch on GPU 0: largest error %.3g of sum|terms| (element %d: %g, want %g), tolerance %.3g: %s\n",
			g, worst, at, got[at], want[at], tol, verdict)
	}
	if !pass {
		return errors.New("the all-reduced gradient differs from the whole batch's")
	}
	fmt.Println("PASS: the sum of the GPUs' gradients equals the gradient of the whole batch")
	return nil
}

// wholeBatch computes the gradient of P over the whole batch on one GPU:
// one Run over shape [N, T, D] with P broadcast over the batch axis (stride
// 0), then the per-sequence gradients summed on the host in float64. scale
// is each element's sum of |terms|, the yardstick of the rounding error.
func wholeBatch(r *rank, dt dtype.DType, p []float64, xs, dys [][]float64, T, D int) (want, scale []float64, err error) {
	N, n := len(xs), T*D
	var x, dy []float64
	for g := range xs {
		x = append(x, xs[g]...)
		dy = append(dy, dys[g]...)
	}
	plan, err := ops.NewBinaryBackward(ops.BinaryDesc{Op: ops.BinaryMul, DType: dt, Shape: []int{N, T, D}})
	if err != nil {
		return nil, nil, err
	}
	bx, err := r.upload(dt, x)
	if err != nil {
		return nil, nil, err
	}
	bdy, err := r.upload(dt, dy)
	if err != nil {
		return nil, nil, err
	}
	bp, err := r.upload(dt, p)
	if err != nil {
		return nil, nil, err
	}
	bdb, err := r.alloc(dt, N*n)
	if err != nil {
		return nil, nil, err
	}
	args := &ops.BinaryArgs{
		DY: ops.NewTensor(bdy, dt, N, T, D), A: ops.NewTensor(bx, dt, N, T, D),
		B:  ops.Tensor{Buf: bp, DType: dt, Shape: []int{N, T, D}, Strides: []int{0, D, 1}},
		DB: ops.NewTensor(bdb, dt, N, T, D),
	}
	if err := plan.Run(r.stream, args); err != nil {
		return nil, nil, err
	}
	if err := r.stream.Synchronize(); err != nil {
		return nil, nil, err
	}
	per, err := r.read(dt, bdb, N*n)
	if err != nil {
		return nil, nil, err
	}
	want, scale = make([]float64, n), make([]float64, n)
	for g := 0; g < N; g++ {
		for i := 0; i < n; i++ {
			want[i] += per[g*n+i]
			scale[i] += math.Abs(per[g*n+i])
		}
	}
	return want, scale, nil
}
