// Package driver binds the CUDA driver API without cgo: it opens
// libcuda.so.1 (nvcuda.dll on Windows) at run time through purego, so a
// program using it builds with CGO_ENABLED=0 for any platform and finds the
// driver on the machine it runs on. It has no kernels and no tensors; it is
// what the rest of the library launches kernels with.
//
// # Layers
//
// The package is three thin layers:
//
//   - Raw symbols: one table of the driver entry points used, resolved by
//     Load. A symbol the installed driver lacks is reported as
//     an error when it is called, never as a panic.
//   - Calls returning errors: every CUresult other than CUDA_SUCCESS becomes
//     an *Error naming the operation, the code and the driver's message
//     (looked up when the error is printed), plus context such as the
//     kernel name and launch shape, or the JIT log of a failed module load.
//     errors.Is matches ErrNoDriver, ErrOutOfMemory, ErrPTXTooNew and
//     ErrUnsupportedDevice.
//   - Owning types: Device, Context, Stream, Event, Module and Function
//     hold driver handles; Buffer is a plain view of device memory.
//
// Load runs lazily on first use. Without a driver every entry point returns
// an error matching ErrNoDriver, so code that merely imports the package
// runs on machines with no GPU.
//
// # Contexts and threads
//
// A Device's Context is its primary context, which the CUDA runtime and
// libraries built on it also use, so memory and streams can be shared with
// them. The driver keeps a current context per OS thread while goroutines
// move between threads, so every method that needs a context locks the
// goroutine to its thread, makes the context current there if it is not,
// calls the driver and unlocks again. All types may be used from any
// goroutine; Destroy and Unload must not race with other uses of the same
// object.
//
// # Streams
//
// Work is queued on explicit streams created with Context.NewStream. They
// do not synchronize with the legacy default stream, which this package
// never uses. Launches and the Async methods only queue work: errors a
// kernel causes while running surface at the next synchronizing call
// (Stream.Synchronize, Event.Synchronize, a synchronous copy). Setting
// BARACUDA_SYNC=1 makes every Launch wait for its kernel, so such errors
// name the kernel that caused them.
//
// # Launching
//
// Kernel parameters are packed into an Args from GetArgs, in the order of
// the PTX .entry parameters, and passed to Function.Launch, which neither
// allocates nor formats anything unless it fails.
//
// # PTX and the driver version
//
// The driver JIT-compiles PTX only up to the ISA version it knows.
// Context.LoadModule compares the module's .version with the driver's
// version first (CheckPTXVersion) and returns an error naming both instead
// of a bare CUDA_ERROR_UNSUPPORTED_PTX_VERSION.
package driver
