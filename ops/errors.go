package ops

import (
	"errors"
	"fmt"

	"github.com/baracuda-go/baracuda/dtype"
)

// Sentinel errors. Every error a plan returns for bad input wraps exactly
// one of them, so callers can branch with errors.Is; the message names the
// plan, op, dtype, the offending field and its values.
var (
	ErrUnsupported    = errors.New("unsupported")
	ErrShape          = errors.New("shape mismatch")
	ErrDType          = errors.New("dtype mismatch")
	ErrMissing        = errors.New("missing tensor")
	ErrMissingSaved   = errors.New("missing saved tensor")
	ErrBufferTooSmall = errors.New("buffer too small")
	ErrLayout         = errors.New("invalid layout")
	ErrAxis           = errors.New("axis out of range")
	ErrRank           = errors.New("rank out of range")
	ErrParam          = errors.New("invalid parameter")
	ErrNilStream      = errors.New("nil stream")
)

// Error is a validation error of a plan.
type Error struct {
	Plan  string      // e.g. "BinaryBackward"
	Op    string      // e.g. "mul"
	DType dtype.DType // the plan's dtype
	Msg   string      // what is wrong, with the field and its values
	Err   error       // one of the sentinels above
}

func (e *Error) Error() string {
	return fmt.Sprintf("ops: %s(%s, %s): %s: %v", e.Plan, e.Op, e.DType, e.Msg, e.Err)
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// planID names a plan in its errors.
type planID struct {
	plan string
	op   string
	dt   dtype.DType
}

func (id planID) errorf(sentinel error, format string, args ...any) error {
	return &Error{Plan: id.plan, Op: id.op, DType: id.dt, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}
