package ref

// AxisSlices views a row-major tensor as the slices along one axis: slice s
// (s = o*Inner + i) holds the K elements at (o*K + j)*Inner + i. The
// reference works slice by slice, so package cpu and the conformance
// suites both walk tensors this way.
type AxisSlices struct{ Outer, K, Inner int }

// NewAxisSlices is the view of shape along axis (0 <= axis < len(shape)).
func NewAxisSlices(shape []int, axis int) AxisSlices {
	v := AxisSlices{Outer: 1, K: shape[axis], Inner: 1}
	for d, n := range shape {
		switch {
		case d < axis:
			v.Outer *= n
		case d > axis:
			v.Inner *= n
		}
	}
	return v
}

// Count is the number of slices.
func (v AxisSlices) Count() int { return v.Outer * v.Inner }

// Len is the elements per slice, K.
func (v AxisSlices) Len() int { return v.K }

// At is the row-major index of position j of slice s.
func (v AxisSlices) At(s, j int) int {
	o, i := s/v.Inner, s%v.Inner
	return (o*v.K+j)*v.Inner + i
}

// Gather copies slice s of t into buf (len(buf) == K).
func (v AxisSlices) Gather(t []float64, s int, buf []float64) {
	for j := range buf {
		buf[j] = t[v.At(s, j)]
	}
}

// Scatter copies buf into slice s of t.
func (v AxisSlices) Scatter(t []float64, s int, buf []float64) {
	for j, x := range buf {
		t[v.At(s, j)] = x
	}
}
