package agg

// skiplist is an indexable skip list: an ordered multiset of E under less,
// with O(log n) expected insert, delete and rank selection and O(1) steps
// to walk the smallest elements in order. Removed nodes are kept on free
// lists, so a list whose size is stable allocates nothing.
type skiplist[E any] struct {
	less  func(a, b E) bool
	head  slNode[E]
	level int
	n     int
	rnd   uint64
	free  [slMaxLevel][]*slNode[E]
}

const slMaxLevel = 24

type slNode[E any] struct {
	e    E
	next []*slNode[E]
	// span[l] is the number of level-0 steps from this node to next[l]
	// (to one past the end when next[l] is nil).
	span []int
}

func newSkiplist[E any](less func(a, b E) bool) *skiplist[E] {
	s := &skiplist[E]{less: less, level: 1, rnd: 0x9e3779b97f4a7c15}
	s.head.next = make([]*slNode[E], slMaxLevel)
	s.head.span = make([]int, slMaxLevel)
	return s
}

// Len is the number of elements.
func (s *skiplist[E]) Len() int { return s.n }

func (s *skiplist[E]) randomLevel() int {
	lv := 1
	for lv < slMaxLevel {
		s.rnd ^= s.rnd << 13
		s.rnd ^= s.rnd >> 7
		s.rnd ^= s.rnd << 17
		if s.rnd&3 != 0 { // p = 1/4
			break
		}
		lv++
	}
	return lv
}

func (s *skiplist[E]) node(e E, lv int) *slNode[E] {
	if f := s.free[lv-1]; len(f) > 0 {
		x := f[len(f)-1]
		s.free[lv-1] = f[:len(f)-1]
		x.e = e
		return x
	}
	return &slNode[E]{e: e, next: make([]*slNode[E], lv), span: make([]int, lv)}
}

// Insert adds e after the elements equal to it.
func (s *skiplist[E]) Insert(e E) {
	var update [slMaxLevel]*slNode[E]
	var rank [slMaxLevel]int
	x := &s.head
	for l := s.level - 1; l >= 0; l-- {
		if l < s.level-1 {
			rank[l] = rank[l+1]
		}
		for x.next[l] != nil && !s.less(e, x.next[l].e) {
			rank[l] += x.span[l]
			x = x.next[l]
		}
		update[l] = x
	}
	lv := s.randomLevel()
	if lv > s.level {
		for l := s.level; l < lv; l++ {
			rank[l] = 0
			update[l] = &s.head
			s.head.span[l] = s.n
		}
		s.level = lv
	}
	nd := s.node(e, lv)
	for l := range lv {
		nd.next[l] = update[l].next[l]
		update[l].next[l] = nd
		nd.span[l] = update[l].span[l] - (rank[0] - rank[l])
		update[l].span[l] = rank[0] - rank[l] + 1
	}
	for l := lv; l < s.level; l++ {
		update[l].span[l]++
	}
	s.n++
}

// Delete removes one element equal to e and reports whether there was one.
func (s *skiplist[E]) Delete(e E) bool {
	var update [slMaxLevel]*slNode[E]
	x := &s.head
	for l := s.level - 1; l >= 0; l-- {
		for x.next[l] != nil && s.less(x.next[l].e, e) {
			x = x.next[l]
		}
		update[l] = x
	}
	x = x.next[0]
	if x == nil || s.less(e, x.e) {
		return false
	}
	for l := 0; l < s.level; l++ {
		if update[l].next[l] == x {
			update[l].span[l] += x.span[l] - 1
			update[l].next[l] = x.next[l]
		} else {
			update[l].span[l]--
		}
	}
	for s.level > 1 && s.head.next[s.level-1] == nil {
		s.head.span[s.level-1] = 0
		s.level--
	}
	s.n--
	var zero E
	x.e = zero
	clear(x.next)
	lv := len(x.next)
	s.free[lv-1] = append(s.free[lv-1], x)
	return true
}

// At returns the element of rank i (0-based); i must be in [0, Len).
func (s *skiplist[E]) At(i int) E {
	target := i + 1
	x := &s.head
	traversed := 0
	for l := s.level - 1; l >= 0; l-- {
		for x.next[l] != nil && traversed+x.span[l] <= target {
			traversed += x.span[l]
			x = x.next[l]
		}
		if traversed == target {
			return x.e
		}
	}
	var zero E
	return zero
}

// Each calls f on the elements in order until f returns false.
func (s *skiplist[E]) Each(f func(E) bool) {
	for x := s.head.next[0]; x != nil; x = x.next[0] {
		if !f(x.e) {
			return
		}
	}
}

// Reset removes every element.
func (s *skiplist[E]) Reset() {
	for x := s.head.next[0]; x != nil; {
		nx := x.next[0]
		var zero E
		x.e = zero
		clear(x.next)
		s.free[len(x.next)-1] = append(s.free[len(x.next)-1], x)
		x = nx
	}
	clear(s.head.next)
	clear(s.head.span)
	s.level, s.n = 1, 0
}
