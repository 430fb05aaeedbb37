package ops

import "errors"

// The reduce plan's checks of a Run's operands (Check): each tensor's
// shape (dy and y in either form) and layout, the workspace, and no
// overlap between dx and the tensors it is computed from.

// keptStride is the stride of dim d of the input shape in a dy or y given
// in either form (for the reduced form, d is not the axis).
func (p *ReduceBackward) keptStride(t *Tensor, d int) int64 {
	if len(t.Shape) == len(p.shape) || d < p.axis {
		return t.strideOf(d)
	}
	return t.strideOf(d - 1)
}

// operand validates one tensor, restating a shape mismatch with what the
// shape must be.
func (p *ReduceBackward) operand(field string, t *Tensor, role tensorRole, keep bool) error {
	shape := p.shape
	if keep {
		shape = p.keep
		if len(t.Shape) == len(p.reduced) {
			shape = p.reduced
		}
	}
	err := p.id.checkTensor(field, t, role, p.desc.DType, shape)
	if errors.Is(err, ErrShape) {
		switch {
		case keep && p.multi != nil:
			return p.multiShapeError(field, t)
		case keep:
			return p.id.errorf(ErrShape, "%s shape %v must equal %v (the input shape %v with axis %d set to 1, keepdim=True) or %v (axis %d removed, keepdim=False)",
				field, t.Shape, p.keep, p.shape, p.axis, p.reduced, p.axis)
		}
		return p.id.errorf(ErrShape, "%s shape %v must equal the input shape %v", field, t.Shape, p.shape)
	}
	if err != nil || p.multi == nil {
		return err
	}
	return p.multiLayout(field, t, keep)
}

// Check validates args against the plan without launching anything.
func (p *ReduceBackward) Check(a *ReduceArgs) error {
	if a == nil {
		return p.id.errorf(ErrMissing, "args is nil")
	}
	if err := p.operand("dy", &a.DY, roleInput, true); err != nil {
		return err
	}
	saved := p.desc.Op.needsSaved()
	if saved {
		if err := p.operand("x", &a.X, roleSaved, false); err != nil {
			return err
		}
		if err := p.operand("y", &a.Y, roleSaved, true); err != nil {
			return err
		}
	}
	if err := p.operand("dx", &a.DX, roleOutput, false); err != nil {
		return err
	}
	if p.ws > 0 {
		w := a.Workspace
		if w.Addr == 0 {
			return p.id.errorf(ErrMissing, "workspace is required: WorkspaceSize() is %d bytes", p.ws)
		}
		if w.Size < p.ws {
			return p.id.errorf(ErrBufferTooSmall, "workspace needs %d bytes (WorkspaceSize) but has %d", p.ws, w.Size)
		}
		if w.Addr%16 != 0 {
			return p.id.errorf(ErrLayout, "workspace address %#x is not 16-byte aligned", uintptr(w.Addr))
		}
	}
	if p.numel == 0 {
		return nil
	}
	if err := p.disjoint("dy", &a.DY, &a.DX); err != nil {
		return err
	}
	if saved {
		if err := p.disjoint("x", &a.X, &a.DX); err != nil {
			return err
		}
		if err := p.disjoint("y", &a.Y, &a.DX); err != nil {
			return err
		}
	}
	return nil
}

// disjoint fails when dx's memory range meets an input's: dx is written
// while x may still be read (in place is not supported).
func (p *ReduceBackward) disjoint(field string, in, dx *Tensor) error {
	size := int64(p.desc.DType.Size())
	lo1, hi1 := memRange(in, size)
	lo2, hi2 := memRange(dx, size)
	if lo1 < hi2 && lo2 < hi1 {
		return p.id.errorf(ErrLayout, "dx [%#x, %#x) overlaps %s [%#x, %#x); dx must not share memory with an input",
			lo2, hi2, field, lo1, hi1)
	}
	return nil
}

// memRange is the byte range from element 0 to the end of the last element
// a (validated, non-empty) tensor addresses.
func memRange(t *Tensor, size int64) (lo, hi uint64) {
	span := int64(1)
	for d := range t.Shape {
		span += int64(t.Shape[d]-1) * t.strideOf(d)
	}
	lo = uint64(t.Buf.Addr)
	return lo, lo + uint64(span*size)
}
