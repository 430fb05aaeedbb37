// Package nccl binds NVIDIA's NCCL (libnccl.so.2) without cgo, so that
// gradients computed on several GPUs can be summed across them, and across
// processes and hosts, before the optimizer step. Like package driver it
// opens the library at run time through purego: a program builds with
// CGO_ENABLED=0 and finds NCCL on the machine it runs on.
//
// # Finding NCCL
//
// Load runs on first use. It opens the file named by BARACUDA_NCCL_LIBRARY
// if that is set, and otherwise the first of SearchPaths that opens:
// libnccl.so.2 through the dynamic loader (LD_LIBRARY_PATH, the ld.so
// cache), the system and CUDA library directories, and the nvidia/nccl/lib
// directory that PyTorch's wheels install (in $VIRTUAL_ENV, ~/.local,
// /usr/local/lib/python3*, /usr/lib/python3* and conda environments). With
// no library every function returns an error matching ErrNoNCCL, never a
// panic, so code that imports the package runs anywhere. NCCL older than
// 2.12 gives ErrVersion. NCCL exists for Linux only.
//
// # Errors
//
// A failed NCCL call gives an *Error that names the call and its key
// arguments, the ncclResult_t's name and NCCL's own message
// (ncclGetErrorString), and NCCL's last error detail (ncclGetLastError,
// NCCL 2.13 on). Errors NCCL meets while queued work runs, such as a peer
// process that died, surface through Comm.AsyncError; Comm.Abort then
// releases the communicator. Arguments are checked before NCCL sees them:
// an *ArgError names the call, the field and its values, and wraps one of
// the sentinels (ErrNilBuffer, ErrBufferTooSmall, ErrCount, ErrRank,
// ErrDType, ErrOp, ErrStream, ErrOverlap, ...) for errors.Is.
//
// # Communicators
//
// InitAll makes a communicator over several GPUs of one process, one Comm
// per GPU. Across processes, one process makes a UniqueID with
// NewUniqueID and sends its 128 bytes to the others by any means (a file,
// a pipe, the network; MarshalBinary and ParseUniqueID convert, and
// ShareUniqueIDFile does it through a file all of them can read); each
// process then calls InitRank with its rank and the device context it
// works on. On amd64 InitRank needs NCCL 2.23 or newer (see InitRank).
//
// # Collectives
//
// AllReduce (Sum, Prod, Max, Min, Avg), Broadcast, Reduce, AllGather and
// ReduceScatter take driver.Buffers and a *driver.Stream of the Comm's
// context, for f32, f16, bf16 and f64 elements; counts are in elements,
// and a count of 0 queues nothing (every rank passes the same count).
// They only queue work on the stream, like a plan's Run, and a warm call
// makes no Go heap allocations. The in-place forms NCCL defines are
// accepted (the same buffer for send and receive; for AllGather and
// ReduceScatter, the rank's own block of the whole).
//
// NCCL keeps a group (GroupStart, GroupEnd) in thread-local state, and one
// goroutine driving several GPUs must put their calls in one group;
// GroupStart locks the goroutine to its thread until GroupEnd. Every other
// call makes the Comm's context current on a locked thread for its
// duration, as package driver does, so Comms may be used from any
// goroutine, one call at a time per Comm.
//
// # NVLink multicast
//
// On hosts whose GPUs are shared, keep NVLink SHARP multicast off by
// setting NCCL_NVLS_ENABLE=0 in the environment before the first call
// (the package's tests, example and benchmark do so unless the variable is
// set): a process that uses it and dies can leave the host's GPUs out of
// service.
//
// # Example
//
// Summing a gradient over every GPU of this process:
//
//	comms, err := nccl.InitAll(nil) // every visible GPU
//	...
//	nccl.GroupStart()
//	for i, c := range comms {
//		c.AllReduce(grads[i], grads[i], n, dtype.F32, nccl.Sum, streams[i]) // in place
//	}
//	err = nccl.GroupEnd()
//
// examples/allreduce is a whole program: each GPU computes a backward
// plan's gradient on its shard of a batch, and the all-reduced sum is
// checked against the whole batch's gradient.
package nccl
