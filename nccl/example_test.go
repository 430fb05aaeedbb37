package nccl_test

import (
	"fmt"
	"os"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
	"github.com/baracuda-go/baracuda/nccl"
)

// Sum n f32 gradients in place over every GPU of this process.
func ExampleInitAll() {
	comms, err := nccl.InitAll(nil)
	if err != nil {
		fmt.Println(err) // ErrNoNCCL without NCCL, driver.ErrNoDriver without a GPU
		return
	}
	const n = 1 << 20
	grads := make([]driver.Buffer, len(comms))
	streams := make([]*driver.Stream, len(comms))
	for i, c := range comms {
		defer c.Destroy()
		streams[i], _ = c.Context().NewStream()
		grads[i], _ = c.Context().Alloc(n * 4) // the GPU's gradient, from a plan's Run
	}
	// One goroutine drives every GPU: their calls form one group.
	if err := nccl.GroupStart(); err != nil {
		fmt.Println(err)
		return
	}
	for i, c := range comms {
		if err := c.AllReduce(grads[i], grads[i], n, dtype.F32, nccl.Sum, streams[i]); err != nil {
			fmt.Println(err)
		}
	}
	if err := nccl.GroupEnd(); err != nil {
		fmt.Println(err)
	}
	for _, s := range streams {
		s.Synchronize()
	}
}

// One rank per process: rank 0 makes the unique id and hands its bytes to
// the others (here through a file; any channel works).
func ExampleInitRank() {
	rank, nranks, path := 0, 2, "/shared/nccl-id"
	var id nccl.UniqueID
	if rank == 0 {
		id, _ = nccl.NewUniqueID()
		b, _ := id.MarshalBinary()
		os.WriteFile(path, b, 0o600)
	} else {
		b, _ := os.ReadFile(path)
		id, _ = nccl.ParseUniqueID(b)
	}
	dev, err := driver.GetDevice(rank)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, err := dev.Context()
	if err != nil {
		fmt.Println(err)
		return
	}
	comm, err := nccl.InitRank(ctx, nranks, rank, id) // returns once every rank has joined
	if err != nil {
		fmt.Println(err)
		return
	}
	defer comm.Destroy()
	fmt.Println(comm.Rank(), "of", comm.Count())
}
