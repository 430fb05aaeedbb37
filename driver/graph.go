package driver

import (
	"errors"
	"unsafe"
)

// Graph is work captured from a stream (Stream.BeginCapture, EndCapture)
// and instantiated (CUgraphExec): Launch replays it on any stream of the
// context with one call, the kernels' arguments as they were captured.
// Destroy must not race with other use of the graph.
type Graph struct {
	ctx   *Context
	graph uintptr // CUgraph
	exec  uintptr // CUgraphExec
}

// captureModeRelaxed is CU_STREAM_CAPTURE_MODE_RELAXED. The other modes
// watch the capturing OS thread for calls that may not be captured, and a
// goroutine moves between threads; relaxed mode leaves those calls to
// fail on their own (a synchronize of the capturing stream, say).
const captureModeRelaxed = 2

// BeginCapture makes s record the work queued on it into a graph instead
// of running it, until EndCapture. Everything queued meanwhile must be
// capturable: kernel launches, device copies and memsets, event records
// and waits. A synchronize of s, or a call that waits for the legacy
// default stream, fails and ends the capture in error.
func (s *Stream) BeginCapture() error {
	if s.handle == 0 {
		return errDestroyed
	}
	prev, err := s.ctx.bind()
	if err != nil {
		return err
	}
	defer s.ctx.unbind(prev)
	return cuStreamBeginCapture.do(s.handle, captureModeRelaxed)
}

// EndCapture stops the capture BeginCapture started and returns the
// recorded work, instantiated for Launch. Where something queued during
// the capture could not be captured, it returns that error and s is back
// to running its work.
func (s *Stream) EndCapture() (*Graph, error) {
	if s.handle == 0 {
		return nil, errDestroyed
	}
	prev, err := s.ctx.bind()
	if err != nil {
		return nil, err
	}
	defer s.ctx.unbind(prev)
	ph := new(uintptr) // CUgraph*: the second parameter
	err = cuStreamEndCapture.call(s.handle, uintptr(unsafe.Pointer(ph)))
	graph := *ph
	if err != nil {
		return nil, annotate(err, "cuStreamEndCapture", "the capture was invalidated by a call that cannot be captured")
	}
	exec, err := cuGraphInstantiateWithFlags.out(graph, 0)
	if err != nil {
		_ = cuGraphDestroy.do(graph)
		return nil, annotate(err, "cuGraphInstantiateWithFlags", "")
	}
	return &Graph{ctx: s.ctx, graph: graph, exec: exec}, nil
}

// Capturing reports whether s is recording a graph.
func (s *Stream) Capturing() (bool, error) {
	if s.handle == 0 {
		return false, errDestroyed
	}
	prev, err := s.ctx.bind()
	if err != nil {
		return false, err
	}
	defer s.ctx.unbind(prev)
	status := new(int32) // CUstreamCaptureStatus: 0 none, 1 active, 2 invalidated
	err = cuStreamIsCapturing.call(s.handle, uintptr(unsafe.Pointer(status)))
	return *status != 0, err
}

// Launch queues the graph's work on s.
func (g *Graph) Launch(s *Stream) error {
	if s == nil {
		return errors.New("driver: Graph.Launch: nil stream")
	}
	if g.exec == 0 || s.handle == 0 {
		return errDestroyed
	}
	prev, err := g.ctx.bind()
	if err != nil {
		return err
	}
	defer g.ctx.unbind(prev)
	return cuGraphLaunch.do(g.exec, s.handle)
}

// Destroy releases the graph. Work it queued already runs to its end.
// Destroying a destroyed graph does nothing.
func (g *Graph) Destroy() error {
	if g.exec == 0 {
		return nil
	}
	prev, err := g.ctx.bind()
	if err != nil {
		return err
	}
	defer g.ctx.unbind(prev)
	err = cuGraphExecDestroy.do(g.exec)
	if err2 := cuGraphDestroy.do(g.graph); err == nil {
		err = err2
	}
	g.exec, g.graph = 0, 0
	return err
}
