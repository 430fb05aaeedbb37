package ops

import (
	"github.com/baracuda-go/baracuda/driver"
	"github.com/baracuda-go/baracuda/dtype"
)

// MaxRank is the highest tensor rank any plan accepts.
const MaxRank = 8

// Tensor describes device memory as a typed, strided array. It does not own
// the memory.
type Tensor struct {
	Buf     driver.Buffer // device memory; Buf.Addr is element 0
	DType   dtype.DType
	Shape   []int
	Strides []int // in elements, one per dim; nil means contiguous row-major
}

// NewTensor returns a contiguous tensor over buf.
func NewTensor(buf driver.Buffer, dt dtype.DType, shape ...int) Tensor {
	return Tensor{Buf: buf, DType: dt, Shape: shape}
}

// Present reports whether the tensor names a buffer or a shape; a zero
// Tensor stands for "not given".
func (t Tensor) Present() bool {
	return t.Buf.Addr != 0 || t.Shape != nil
}

// numel is the product of dims, 0 when any dim is 0.
func numel(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	return n
}

// strideOf returns the stride of dim d, computing row-major strides for a
// contiguous tensor without allocating.
func (t *Tensor) strideOf(d int) int64 {
	if t.Strides != nil {
		return int64(t.Strides[d])
	}
	s := int64(1)
	for i := d + 1; i < len(t.Shape); i++ {
		s *= int64(t.Shape[i])
	}
	return s
}

// isContiguous reports row-major contiguity (size-1 dims may carry any stride).
func (t *Tensor) isContiguous() bool {
	if t.Strides == nil {
		return true
	}
	want := int64(1)
	for d := len(t.Shape) - 1; d >= 0; d-- {
		if t.Shape[d] != 1 && int64(t.Strides[d]) != want {
			return false
		}
		want *= int64(t.Shape[d])
	}
	return true
}

func shapeEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkDType validates a descriptor dtype.
func (id planID) checkDType(dt dtype.DType) error {
	if !dt.Valid() {
		return id.errorf(ErrDType, "dtype %s is not one of f32, f16, bf16, f64", dt)
	}
	return nil
}

// normalizeAxis checks axis against shape's rank and maps a negative axis
// (counting from the end, as in PyTorch) to its index.
func (id planID) normalizeAxis(axis int, shape []int) (int, error) {
	rank := len(shape)
	if axis < -rank || axis >= rank {
		return 0, id.errorf(ErrAxis, "axis %d is out of range for rank %d, shape %v (rank %d takes -%d..%d)",
			axis, rank, shape, rank, rank, rank-1)
	}
	if axis < 0 {
		axis += rank
	}
	return axis, nil
}

// checkShape validates a descriptor shape: rank 0..MaxRank (minRank and up)
// and no negative dims.
func (id planID) checkShape(field string, shape []int, minRank int) error {
	if len(shape) < minRank || len(shape) > MaxRank {
		return id.errorf(ErrRank, "%s rank %d (shape %v) must be between %d and %d", field, len(shape), shape, minRank, MaxRank)
	}
	for i, d := range shape {
		if d < 0 {
			return id.errorf(ErrShape, "%s dim %d is %d (shape %v); dims must be >= 0", field, i, d, shape)
		}
	}
	return nil
}

// tensorRole says what validation a tensor gets.
type tensorRole uint8

const (
	roleInput  tensorRole = iota // dy: must be given
	roleSaved                    // a saved forward tensor: missing -> ErrMissingSaved
	roleOutput                   // written: no two elements may share memory
)

// checkTensor validates one operand against the dtype and shape the plan
// expects: presence, dtype, shape, strides (non-negative; outputs without
// self-overlap), alignment and the buffer bound of the highest element
// touched. It does not allocate unless it fails.
func (id planID) checkTensor(field string, t *Tensor, role tensorRole, dt dtype.DType, shape []int) error {
	n := numel(shape)
	if t.Buf.Addr == 0 && n > 0 {
		if role == roleSaved {
			return id.errorf(ErrMissingSaved, "%s is required by %s but was not given", field, id.op)
		}
		return id.errorf(ErrMissing, "%s has no buffer", field)
	}
	if t.DType != dt {
		return id.errorf(ErrDType, "%s dtype %s must be %s", field, t.DType, dt)
	}
	if !shapeEqual(t.Shape, shape) {
		return id.errorf(ErrShape, "%s shape %v must equal %v", field, t.Shape, shape)
	}
	if t.Strides != nil && len(t.Strides) != len(t.Shape) {
		return id.errorf(ErrLayout, "%s has %d strides %v for rank %d", field, len(t.Strides), t.Strides, len(t.Shape))
	}
	for d := range t.Strides {
		if t.Strides[d] < 0 {
			return id.errorf(ErrLayout, "%s stride %d is %d (strides %v); strides must be >= 0", field, d, t.Strides[d], t.Strides)
		}
	}
	if n == 0 {
		return nil
	}
	size := int64(dt.Size())
	if int64(t.Buf.Addr)%size != 0 {
		return id.errorf(ErrLayout, "%s address %#x is not aligned to its %d-byte elements", field, uintptr(t.Buf.Addr), size)
	}
	span := int64(1)
	for d := range t.Shape {
		span += int64(t.Shape[d]-1) * t.strideOf(d)
	}
	if span*size > t.Buf.Size {
		return id.errorf(ErrBufferTooSmall, "%s needs %d bytes (%d %s elements up to the last one touched) but its buffer has %d",
			field, span*size, span, dt, t.Buf.Size)
	}
	if role == roleOutput && t.Strides != nil && overlaps(t) {
		return id.errorf(ErrLayout, "%s strides %v for shape %v make elements share memory; outputs must not overlap", field, t.Strides, t.Shape)
	}
	return nil
}

// overlaps reports whether two distinct indices of t address the same
// element. Sorting dims by stride, each stride must exceed the extent of
// all smaller-stride dims; that is sufficient for no overlap and it accepts
// every permuted or sliced dense layout.
func overlaps(t *Tensor) bool {
	var st, dm [MaxRank]int64
	k := 0
	for d := range t.Shape {
		if t.Shape[d] == 1 {
			continue
		}
		st[k], dm[k] = int64(t.Strides[d]), int64(t.Shape[d])
		k++
	}
	for i := 1; i < k; i++ { // insertion sort by stride: k <= 8
		for j := i; j > 0 && st[j] < st[j-1]; j-- {
			st[j], st[j-1] = st[j-1], st[j]
			dm[j], dm[j-1] = dm[j-1], dm[j]
		}
	}
	extent := int64(1) // elements spanned by the dims already placed
	for i := 0; i < k; i++ {
		if st[i] < extent {
			return true
		}
		extent = st[i]*(dm[i]-1) + extent
	}
	return false
}
