package nccl

import "runtime"

// GroupStart begins a group of NCCL calls (ncclGroupStart): the
// collectives issued until the matching GroupEnd are queued together,
// which is how one goroutine drives several communicators (the Comms of
// InitAll) without deadlocking, and how several collectives are fused.
//
// NCCL keeps the group in thread-local state, so GroupStart locks the
// calling goroutine to its OS thread and GroupEnd unlocks it: the calls of
// a group and its GroupEnd must come from the goroutine that called
// GroupStart. Groups nest.
func GroupStart() error {
	if err := Load(); err != nil {
		return err
	}
	runtime.LockOSThread()
	if r := ncclGroupStart.do(); r != Success {
		runtime.UnlockOSThread()
		return callError("ncclGroupStart", r, 0)
	}
	return nil
}

// GroupEnd ends the group GroupStart began and queues its calls
// (ncclGroupEnd); errors of any call in the group are reported here.
func GroupEnd() error {
	if err := Load(); err != nil {
		return err
	}
	r := ncclGroupEnd.do()
	runtime.UnlockOSThread()
	if r != Success {
		return callError("ncclGroupEnd", r, 0)
	}
	return nil
}
