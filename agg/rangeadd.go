package agg

import "math"

// AddRange implementations (RangeAdder) of the standard states: each is
// its Add's loop over the rows' positions, in row order, so that the
// floating-point sums round exactly as they would row by row (integer
// sums, exact in any order, are taken by sumInts and sumUints).

// positions returns the positions in r's slices of rows [lo, hi).
func positions(r *Rows, lo, hi int64) (int, int) {
	return int(lo - r.Base), int(hi - r.Base)
}

func (s *countState) AddRange(r *Rows, lo, hi int64) {
	if s.col < 0 {
		if !s.none {
			s.n += hi - lo
		}
		return
	}
	i, j := positions(r, lo, hi)
	for _, null := range r.Cols[s.col].Null[i:j] {
		if !null {
			s.n++
		}
	}
}

func (s *sumIntState) AddRange(r *Rows, lo, hi int64) {
	i, j := positions(r, lo, hi)
	c := &r.Cols[s.col]
	n, sum := sumInts(c.I64[i:j], c.Null[i:j])
	s.n += n
	s.sum.addWide(sum)
}

func (s *sumUintState) AddRange(r *Rows, lo, hi int64) {
	i, j := positions(r, lo, hi)
	c := &r.Cols[s.col]
	n, sum := sumUints(c.I64[i:j], c.Null[i:j])
	s.n += n
	s.sum.addWide(sum)
}

func (s *sumFloatState) AddRange(r *Rows, lo, hi int64) {
	i, j := positions(r, lo, hi)
	c := &r.Cols[s.col]
	vals, nulls := c.F64[i:j], c.Null[i:j]
	// A plain compensated sum first (the common case: finite values
	// below hugeMin); only a run that holds a NaN, an infinity or a huge
	// value is summed again, counting those apart.
	ks, n, plain := s.s.k, s.n, true
	for k, null := range nulls {
		if !null {
			v := vals[k]
			n++
			ks.add(v)
			if !(math.Abs(v) < hugeMin) {
				plain = false
			}
		}
	}
	s.n = n
	if plain {
		s.s.k = ks
		return
	}
	fs := s.s
	for k, null := range nulls {
		if !null {
			fs.add(vals[k])
		}
	}
	s.s = fs
}

func (s *avgIntState) AddRange(r *Rows, lo, hi int64) {
	i, j := positions(r, lo, hi)
	c := &r.Cols[s.col]
	n, sum := sumInts(c.I64[i:j], c.Null[i:j])
	s.n += n
	s.sum.addWide(sum)
}

func (s *avgUintState) AddRange(r *Rows, lo, hi int64) {
	i, j := positions(r, lo, hi)
	c := &r.Cols[s.col]
	n, sum := sumUints(c.I64[i:j], c.Null[i:j])
	s.n += n
	s.sum.addWide(sum)
}

func (s *avgFloatState) AddRange(r *Rows, lo, hi int64) {
	i, j := positions(r, lo, hi)
	c := &r.Cols[s.col]
	vals := c.F64[i:j]
	for k, null := range c.Null[i:j] {
		if !null {
			s.n++
			s.sum.add(vals[k])
		}
	}
}

func (s *extremumState[T]) AddRange(r *Rows, lo, hi int64) {
	i, j := positions(r, lo, hi)
	c := &r.Cols[s.col]
	if x, ok := any(s).(*extremumState[float64]); ok && x.ops == floatOps {
		addFloats(x, c.F64[i:j], c.Null[i:j])
		return
	}
	for k := i; k < j; k++ {
		if !c.Null[k] {
			s.offer(s.ops.get(c, k))
		}
	}
}

// addFloats offers x the non-NULL values of vals, with floatLess called
// directly (NaN is the largest float, floatOps' order).
func addFloats(x *extremumState[float64], vals []float64, nulls []bool) {
	has, best := x.has, x.v
	for k, null := range nulls {
		if null {
			continue
		}
		v := vals[k]
		switch {
		case !has:
			has, best = true, v
		case x.isMax:
			if floatLess(best, v) {
				best = v
			}
		default:
			if floatLess(v, best) {
				best = v
			}
		}
	}
	x.has, x.v = has, best
}

func (s *varianceState) AddRange(r *Rows, lo, hi int64) {
	for a := lo; a < hi; a++ {
		if x, ok := s.value(r, a); ok {
			s.add(x)
		}
	}
}

func (s *varianceIntState) AddRange(r *Rows, lo, hi int64) {
	for a := lo; a < hi; a++ {
		s.Add(r, a)
	}
}

func (s *varianceUintState) AddRange(r *Rows, lo, hi int64) {
	for a := lo; a < hi; a++ {
		s.Add(r, a)
	}
}

// AddRange adds the runs of rows whose condition is TRUE, each in one
// call when the base state is a RangeAdder.
func (s *whereState) AddRange(r *Rows, lo, hi int64) {
	c := &r.Cols[s.cond]
	ra, ok := s.inner.(RangeAdder)
	if !ok {
		for a := lo; a < hi; a++ {
			if rowTrue(c, int(a-r.Base)) {
				s.inner.Add(r, a)
			}
		}
		return
	}
	for a := lo; a < hi; {
		for a < hi && !rowTrue(c, int(a-r.Base)) {
			a++
		}
		b := a
		for b < hi && rowTrue(c, int(b-r.Base)) {
			b++
		}
		if b > a {
			ra.AddRange(r, a, b)
		}
		a = b
	}
}
