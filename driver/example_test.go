package driver_test

import (
	"errors"
	"fmt"

	"github.com/baracuda-go/baracuda/driver"
)

// A kernel launch: scale x by alpha in place, with the grid-stride kernel
//
//	.visible .entry scale_f32(.param .u64 x, .param .f32 alpha, .param .u64 n)
func Example() {
	dev, err := driver.GetDevice(0)
	if errors.Is(err, driver.ErrNoDriver) {
		fmt.Println("no GPU:", err)
		return
	}
	if err != nil {
		panic(err)
	}
	ctx, err := dev.Context()
	if err != nil {
		panic(err)
	}
	stream, err := ctx.NewStream()
	if err != nil {
		panic(err)
	}
	defer stream.Destroy()

	mod, err := ctx.LoadModule("scale", scalePTX)
	if err != nil {
		panic(err) // names the driver and PTX versions, or carries the JIT log
	}
	fn, err := mod.Function("scale_f32")
	if err != nil {
		panic(err)
	}

	host := []float32{1, 2, 3, 4}
	x, err := ctx.Alloc(int64(4 * len(host)))
	if err != nil {
		panic(err)
	}
	defer ctx.Free(x)
	if err := driver.CopyToDevice(ctx, x, host); err != nil {
		panic(err)
	}

	a := driver.GetArgs()
	a.Ptr(x.Addr)
	a.F32(10)
	a.U64(uint64(len(host)))
	err = fn.Launch(stream, [3]uint32{1, 1, 1}, [3]uint32{256, 1, 1}, 0, a)
	driver.PutArgs(a)
	if err != nil {
		panic(err)
	}
	if err := stream.Synchronize(); err != nil {
		panic(err)
	}
	if err := driver.CopyFromDevice(ctx, host, x); err != nil {
		panic(err)
	}
	fmt.Println(host)
}

var scalePTX = []byte(`
.version 7.0
.target sm_70
.address_size 64

.visible .entry scale_f32(
	.param .u64 x,
	.param .f32 alpha,
	.param .u64 n
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<3>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<9>;

	ld.param.u64 	%rd3, [x];
	ld.param.f32 	%f1, [alpha];
	ld.param.u64 	%rd4, [n];
	cvta.to.global.u64 	%rd1, %rd3;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %tid.x;
	mad.lo.s32 	%r4, %r1, %r2, %r3;
	cvt.u64.u32 	%rd8, %r4;
	mov.u32 	%r1, %nctaid.x;
	mul.lo.s32 	%r2, %r1, %r2;
	cvt.u64.u32 	%rd2, %r2;
LOOP:
	setp.ge.u64 	%p1, %rd8, %rd4;
	@%p1 bra 	DONE;
	shl.b64 	%rd5, %rd8, 2;
	add.s64 	%rd6, %rd1, %rd5;
	ld.global.f32 	%f2, [%rd6];
	mul.f32 	%f2, %f2, %f1;
	st.global.f32 	[%rd6], %f2;
	add.s64 	%rd8, %rd8, %rd2;
	bra.uni 	LOOP;
DONE:
	ret;
}
`)
