package nccl

import (
	"errors"
	"strings"
	"testing"

	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// fakeComm is rank 1 of 4 with a handle that is never called: the
// arguments below are refused before any NCCL call, except by the stream
// check, which needs a real context and so refuses every stream here.
func fakeComm() *Comm { return &Comm{handle: 1, rank: 1, count: 4} }

func buf(addr, size int64) driver.Buffer {
	return driver.Buffer{Addr: driver.DevicePtr(addr), Size: size}
}

func TestCollectiveValidation(t *testing.T) {
	c := fakeComm()
	f32 := dtype.F32
	big := buf(1<<20, 1<<20)
	other := buf(1<<22, 1<<20)
	wrapped, err := (&driver.Context{}).WrapStream(7)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
		want string // a piece of the message
		call func() error
	}{
		{"nil send", ErrNilBuffer, "send has address 0", func() error { return c.AllReduce(driver.Buffer{}, big, 4, f32, Sum, nil) }},
		{"small recv", ErrBufferTooSmall, "recv needs 4096 bytes (1024 f32 elements) but its buffer has 100", func() error {
			return c.AllReduce(big, buf(1<<23, 100), 1024, f32, Sum, nil)
		}},
		{"negative count", ErrCount, "count -1 is negative", func() error { return c.AllReduce(big, big, -1, f32, Sum, nil) }},
		{"bad dtype", ErrDType, "dtype invalid", func() error { return c.AllReduce(big, big, 1, dtype.Invalid, Sum, nil) }},
		{"bad op", ErrOp, "op op(9)", func() error { return c.AllReduce(big, big, 1, f32, Op(9), nil) }},
		{"partial overlap", ErrOverlap, "overlap without being the same buffer", func() error {
			return c.AllReduce(big, big.Slice(4, 1<<19), 1024, f32, Sum, nil)
		}},
		{"nil stream", ErrStream, "stream is nil", func() error { return c.AllReduce(big, big, 1024, f32, Sum, nil) }},
		{"stream of another context", ErrStream, "stream belongs to device -1's context", func() error {
			return c.AllReduce(big, other, 1024, f32, Sum, wrapped)
		}},
		{"root out of range", ErrRank, "root 4 is outside 0..3 (4 ranks)", func() error { return c.Broadcast(big, big, 1, f32, 4, nil) }},
		{"negative root", ErrRank, "root -1", func() error { return c.Reduce(big, big, 1, f32, Sum, -1, nil) }},
		{"reduce send", ErrNilBuffer, "send has address 0", func() error { return c.Reduce(driver.Buffer{}, driver.Buffer{}, 1, f32, Max, 0, nil) }},
		{"allgather recv", ErrBufferTooSmall, "recv needs 64 bytes (16 f32 elements)", func() error {
			return c.AllGather(buf(1<<23, 16), buf(1<<24, 60), 4, f32, nil)
		}},
		{"allgather in place off by one", ErrOverlap, "must start at element 4", func() error {
			return c.AllGather(big.Slice(20, 16), big, 4, f32, nil)
		}},
		{"reducescatter send", ErrBufferTooSmall, "send needs 256 bytes (32 f64 elements) but its buffer has 64", func() error {
			return c.ReduceScatter(buf(1<<23, 64), big, 8, dtype.F64, Sum, nil)
		}},
		{"reducescatter op", ErrOp, "op op(-1)", func() error { return c.ReduceScatter(big, other, 8, dtype.BF16, Op(-1), nil) }},
		{"destroyed", ErrDestroyed, "destroyed", func() error { return (&Comm{}).AllReduce(big, big, 1, f32, Sum, nil) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.err) {
				t.Fatalf("got %v, want an error matching %v", err, tc.err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "nccl: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

// TestInPlaceAccepted checks that the in-place layouts NCCL defines pass
// validation (and reach the stream check, the last one).
func TestInPlaceAccepted(t *testing.T) {
	c := fakeComm()
	f16 := dtype.F16
	whole := buf(1<<20, 4*8*2) // 4 ranks x 8 f16
	mine := whole.Slice(1*8*2, 8*2)
	for name, call := range map[string]func() error{
		"allreduce":     func() error { return c.AllReduce(whole, whole, 32, f16, Avg, nil) },
		"broadcast":     func() error { return c.Broadcast(whole, whole, 32, f16, 1, nil) },
		"reduce":        func() error { return c.Reduce(whole, whole, 32, f16, Prod, 1, nil) },
		"allgather":     func() error { return c.AllGather(mine, whole, 8, f16, nil) },
		"reducescatter": func() error { return c.ReduceScatter(whole, mine, 8, f16, Min, nil) },
		// Off root, Broadcast's send and Reduce's recv are not used.
		"broadcast off root": func() error { return c.Broadcast(driver.Buffer{}, whole, 32, f16, 0, nil) },
		"reduce off root":    func() error { return c.Reduce(whole, driver.Buffer{}, 32, f16, Sum, 0, nil) },
	} {
		if err := call(); !errors.Is(err, ErrStream) {
			t.Errorf("%s: %v, want only the nil stream refused", name, err)
		}
	}
}

func TestZeroCountNeedsNoBuffers(t *testing.T) {
	c := fakeComm()
	if err := c.AllReduce(driver.Buffer{}, driver.Buffer{}, 0, dtype.F32, Sum, nil); !errors.Is(err, ErrStream) {
		t.Errorf("count 0 with zero buffers: %v, want only the nil stream refused", err)
	}
}

func TestInitRankArguments(t *testing.T) {
	isolateLoad(t)
	// Pretend a library is loaded so the argument checks run.
	loadOnce.Do(func() {})
	version = 22703
	if _, err := InitRank(nil, 2, 0, UniqueID{}); !errors.Is(err, ErrContext) {
		t.Errorf("nil ctx: %v, want ErrContext", err)
	}
	ctx := &driver.Context{}
	if _, err := InitRank(ctx, 0, 0, UniqueID{}); !errors.Is(err, ErrCount) {
		t.Errorf("nranks 0: %v, want ErrCount", err)
	}
	if _, err := InitRank(ctx, 2, 2, UniqueID{}); !errors.Is(err, ErrRank) || !strings.Contains(err.Error(), "rank 2 is outside 0..1") {
		t.Errorf("rank 2 of 2: %v, want ErrRank", err)
	}
}
