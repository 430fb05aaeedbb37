package driver

import (
	"bytes"
	"fmt"
	"sync"
	"unsafe"
)

// Device attributes (CUdevice_attribute) the package reads itself.
const (
	attrMultiprocessorCount         = 16
	attrMaxThreadsPerMultiprocessor = 39
	attrL2CacheSize                 = 38
	attrComputeCapabilityMajor      = 75
	attrComputeCapabilityMinor      = 76
	attrMaxSharedPerBlockOptin      = 97
)

// Device is one GPU as the driver numbers it. Its name, compute capability,
// multiprocessor count, threads per multiprocessor, L2 cache size,
// shared-memory limit and total memory are read once, when GetDevice first
// opens it, so the methods that return them make no driver call. A Device
// may be used from any goroutine.
type Device struct {
	// The cached attributes are the device's identity and what launchers
	// size grids with.
	ordinal      int
	handle       int32 // CUdevice
	name         string
	major, minor int
	sms          int
	threadsPerSM int
	l2           int
	smemOptin    int
	totalMem     int64

	ctxMu sync.Mutex
	ctx   *Context
}

var devices struct {
	sync.Mutex
	m map[int]*Device
}

// DeviceCount returns the number of CUDA devices.
func DeviceCount() (int, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	n, err := cuDeviceGetCount.out()
	if err != nil {
		return 0, err
	}
	return int(int32(n)), nil
}

// GetDevice returns the device with the given ordinal (0 is the first). It
// returns the same *Device for an ordinal on every call.
func GetDevice(ordinal int) (*Device, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	devices.Lock()
	defer devices.Unlock()
	if d := devices.m[ordinal]; d != nil {
		return d, nil
	}
	d, err := openDevice(ordinal)
	if err != nil {
		return nil, err
	}
	if devices.m == nil {
		devices.m = map[int]*Device{}
	}
	devices.m[ordinal] = d
	return d, nil
}

func openDevice(ordinal int) (*Device, error) {
	h, err := cuDeviceGet.out(uintptr(ordinal))
	if err != nil {
		return nil, annotate(err, fmt.Sprintf("cuDeviceGet(%d)", ordinal), "")
	}
	d := &Device{ordinal: ordinal, handle: int32(h)}

	name := new([256]byte)
	if err := cuDeviceGetName.call(uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), uintptr(d.handle)); err != nil {
		return nil, err
	}
	if i := bytes.IndexByte(name[:], 0); i >= 0 {
		d.name = string(name[:i])
	} else {
		d.name = string(name[:])
	}

	for _, a := range []struct {
		attr int
		dst  *int
	}{
		{attrComputeCapabilityMajor, &d.major},
		{attrComputeCapabilityMinor, &d.minor},
		{attrMultiprocessorCount, &d.sms},
		{attrMaxThreadsPerMultiprocessor, &d.threadsPerSM},
		{attrL2CacheSize, &d.l2},
		{attrMaxSharedPerBlockOptin, &d.smemOptin},
	} {
		v, err := d.Attribute(a.attr)
		if err != nil {
			return nil, err
		}
		*a.dst = v
	}

	mem, err := cuDeviceTotalMem.out(uintptr(d.handle))
	if err != nil {
		return nil, err
	}
	d.totalMem = int64(mem)
	return d, nil
}

// Ordinal returns the device's ordinal.
func (d *Device) Ordinal() int { return d.ordinal }

// Name returns the product name, such as "NVIDIA H100 80GB HBM3".
func (d *Device) Name() (string, error) { return d.name, nil }

// ComputeCapability returns the device's compute capability (8, 0 for sm_80).
func (d *Device) ComputeCapability() (major, minor int, err error) {
	return d.major, d.minor, nil
}

// SMCount returns the number of streaming multiprocessors.
func (d *Device) SMCount() (int, error) { return d.sms, nil }

// MaxThreadsPerSM returns how many threads one multiprocessor holds resident.
func (d *Device) MaxThreadsPerSM() (int, error) { return d.threadsPerSM, nil }

// L2CacheSize returns the size of the L2 cache in bytes.
func (d *Device) L2CacheSize() (int, error) { return d.l2, nil }

// MaxSharedMemPerBlockOptin returns the most shared memory, in bytes, a
// block may use once its function opts in beyond the default 48 KiB.
func (d *Device) MaxSharedMemPerBlockOptin() (int, error) { return d.smemOptin, nil }

// TotalMem returns the device memory in bytes.
func (d *Device) TotalMem() (int64, error) { return d.totalMem, nil }

// Attribute returns a device attribute (a CUdevice_attribute value, such as
// 16 for CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).
func (d *Device) Attribute(attr int) (int, error) {
	v, err := cuDeviceGetAttribute.out(uintptr(attr), uintptr(d.handle))
	if err != nil {
		return 0, annotate(err, fmt.Sprintf("cuDeviceGetAttribute(%d, device %d)", attr, d.ordinal), "")
	}
	return int(int32(v)), nil
}

// Context returns the device's primary context, the one the CUDA runtime
// and libraries built on it (cuBLAS, PyTorch) also use, so memory and
// streams can be shared with them. It is retained on first use and kept for
// the life of the process.
func (d *Device) Context() (*Context, error) {
	d.ctxMu.Lock()
	defer d.ctxMu.Unlock()
	if d.ctx != nil {
		return d.ctx, nil
	}
	h, err := cuDevicePrimaryCtxRetain.out(uintptr(d.handle))
	if err != nil {
		return nil, annotate(err, fmt.Sprintf("cuDevicePrimaryCtxRetain(device %d)", d.ordinal), "")
	}
	d.ctx = &Context{dev: d, handle: h}
	return d.ctx, nil
}
