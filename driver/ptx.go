package driver

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// ErrPTXTooNew is wrapped by CheckPTXVersion (and so Context.LoadModule)
// when the driver is older than the PTX ISA version requires.
var ErrPTXTooNew = errors.New("driver: PTX ISA version too new for the driver")

// ErrUnsupportedDevice is wrapped by CheckComputeCapability when a device is
// older than a kernel needs.
var ErrUnsupportedDevice = errors.New("driver: unsupported device")

// ptxISAReleases maps each PTX ISA version to the first CUDA release whose
// driver JIT-compiles it. A driver accepts every ISA up to its own.
var ptxISAReleases = [...]struct{ major, minor, cuda int }{
	{6, 0, 9000}, {6, 1, 9010}, {6, 2, 9020}, {6, 3, 10000}, {6, 4, 10010}, {6, 5, 10020},
	{7, 0, 11000}, {7, 1, 11010}, {7, 2, 11020}, {7, 3, 11030}, {7, 4, 11040},
	{7, 5, 11050}, {7, 6, 11060}, {7, 7, 11070}, {7, 8, 11080},
	{8, 0, 12000}, {8, 1, 12010}, {8, 2, 12020}, {8, 3, 12030}, {8, 4, 12040},
	{8, 5, 12050}, {8, 6, 12070}, {8, 7, 12080}, {8, 8, 12090},
	{9, 0, 13000},
}

// MinDriverForPTX returns the oldest CUDA driver version (1000*major +
// 10*minor) that accepts PTX of ISA version major.minor. ISA versions older
// than 6.0 are accepted by every driver this package can use and report 0.
// ok is false for versions the package does not know: newer than 9.0, or
// never released.
func MinDriverForPTX(major, minor int) (cudaVersion int, ok bool) {
	if major < 6 {
		return 0, true
	}
	for _, r := range ptxISAReleases {
		if r.major == major && r.minor == minor {
			return r.cuda, true
		}
	}
	return 0, false
}

// CheckPTXVersion reports, as an error wrapping ErrPTXTooNew, whether a
// driver of the given version (as Version returns it) is too old to load
// ptx, and an error if ptx has no valid .version directive.
func CheckPTXVersion(ptx []byte, driverVersion int) error {
	major, minor, err := PTXVersion(ptx)
	if err != nil {
		return err
	}
	need, ok := MinDriverForPTX(major, minor)
	if ok && driverVersion >= need {
		return nil
	}
	newest := ptxISAReleases[len(ptxISAReleases)-1]
	if !ok {
		if driverVersion > newest.cuda || !isNewer(major, minor, newest.major, newest.minor) {
			// A driver newer than the table may well know this ISA; let
			// it decide. A gap in the table is not a reason to refuse.
			return nil
		}
		return &messageError{
			msg: fmt.Sprintf("driver: driver CUDA %s (%d) is older than PTX ISA %d.%d, which needs a CUDA release newer than %s: update the NVIDIA driver",
				FormatCUDAVersion(driverVersion), driverVersion, major, minor, FormatCUDAVersion(newest.cuda)),
			err: ErrPTXTooNew,
		}
	}
	return &messageError{
		msg: fmt.Sprintf("driver: driver CUDA %s (%d) is older than PTX ISA %d.%d, which needs CUDA %s or newer: update the NVIDIA driver",
			FormatCUDAVersion(driverVersion), driverVersion, major, minor, FormatCUDAVersion(need)),
		err: ErrPTXTooNew,
	}
}

func isNewer(major, minor, thanMajor, thanMinor int) bool {
	return major > thanMajor || major == thanMajor && minor > thanMinor
}

// FormatCUDAVersion formats a CUDA version number as the driver reports it:
// 11080 is "11.8", 13000 is "13.0".
func FormatCUDAVersion(v int) string {
	return strconv.Itoa(v/1000) + "." + strconv.Itoa(v%1000/10)
}

// CheckComputeCapability returns an error wrapping ErrUnsupportedDevice if
// compute capability major.minor is below minMajor.minMinor.
func CheckComputeCapability(major, minor, minMajor, minMinor int) error {
	if isNewer(minMajor, minMinor, major, minor) {
		return fmt.Errorf("%w: compute capability %d.%d is below the minimum %d.%d",
			ErrUnsupportedDevice, major, minor, minMajor, minMinor)
	}
	return nil
}

// PTXVersion returns the ISA version of a PTX module, from its ".version
// X.Y" directive.
func PTXVersion(ptx []byte) (major, minor int, err error) {
	arg, ok := ptxDirective(ptx, ".version")
	if !ok {
		return 0, 0, errors.New("driver: PTX has no .version directive")
	}
	a, b, found := bytes.Cut(arg, []byte("."))
	major, err1 := strconv.Atoi(string(a))
	minor, err2 := strconv.Atoi(string(b))
	if !found || err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return 0, 0, fmt.Errorf("driver: malformed PTX directive .version %q", arg)
	}
	return major, minor, nil
}

// PTXTarget returns the first architecture of a PTX module's ".target"
// directive, such as "sm_70".
func PTXTarget(ptx []byte) (string, error) {
	arg, ok := ptxDirective(ptx, ".target")
	if !ok {
		return "", errors.New("driver: PTX has no .target directive")
	}
	target, _, _ := bytes.Cut(arg, []byte(","))
	target = bytes.TrimSpace(target)
	if len(target) == 0 || bytes.ContainsAny(target, " \t") {
		return "", fmt.Errorf("driver: malformed PTX directive .target %q", arg)
	}
	return string(target), nil
}

// ptxDirective returns the rest of the line of the first directive called
// name in ptx, skipping comments. The module-level directives this is used
// for come first in a module, so the scan ends early.
func ptxDirective(ptx []byte, name string) ([]byte, bool) {
	inBlock := false
	for len(ptx) > 0 {
		var line []byte
		line, ptx, _ = bytes.Cut(ptx, []byte("\n"))
		line = stripComments(line, &inBlock)
		line = bytes.TrimSpace(line)
		rest, ok := bytes.CutPrefix(line, []byte(name))
		if !ok || len(rest) == 0 || (rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		return bytes.TrimSpace(rest), true
	}
	return nil, false
}

// stripComments removes // and /* */ comments from one line; inBlock
// carries an open block comment to the next line.
func stripComments(line []byte, inBlock *bool) []byte {
	if !*inBlock && bytes.IndexByte(line, '/') < 0 {
		return line
	}
	var out []byte
	for len(line) > 0 {
		if *inBlock {
			_, after, found := bytes.Cut(line, []byte("*/"))
			if !found {
				return out
			}
			*inBlock = false
			line = after
			continue
		}
		i := bytes.IndexByte(line, '/')
		if i < 0 || i+1 == len(line) {
			return append(out, line...)
		}
		switch line[i+1] {
		case '/':
			return append(out, line[:i]...)
		case '*':
			out = append(out, line[:i]...)
			out = append(out, ' ')
			line = line[i+2:]
			*inBlock = true
		default:
			out = append(out, line[:i+1]...)
			line = line[i+1:]
		}
	}
	return out
}

// messageError is an error with its own message that still matches a
// sentinel with errors.Is.
type messageError struct {
	msg string
	err error
}

func (e *messageError) Error() string { return e.msg }
func (e *messageError) Unwrap() error { return e.err }
