package agg

// StatesAllocator is implemented by Funcs that can make several empty
// states in one allocation. Operators that open many short-lived states
// at once (a GROUP BY window per key and start) use it through NewStates.
type StatesAllocator interface {
	// NewStates fills dst with empty states.
	NewStates(dst []State)
}

// NewStates fills dst with empty states of f: in one allocation when f is
// a StatesAllocator, else one NewState each. The states of one call share
// their memory, which stays allocated while any of them is reachable:
// allocate together states that are dropped together.
func NewStates(f Func, dst []State) {
	if sa, ok := f.(StatesAllocator); ok {
		sa.NewStates(dst)
		return
	}
	for i := range dst {
		dst[i] = f.NewState()
	}
}

// newStates fills dst with pointers to the elements of one new slice of
// copies of proto.
func newStates[S any, P interface {
	*S
	State
}](dst []State, proto S) {
	s := make([]S, len(dst))
	for i := range s {
		s[i] = proto
		dst[i] = P(&s[i])
	}
}

func (f *countFunc) NewStates(dst []State) {
	newStates[countState](dst, countState{col: f.col, none: f.none})
}

func (f *sumFunc) NewStates(dst []State) {
	switch {
	case f.float:
		newStates[sumFloatState](dst, sumFloatState{col: f.col})
	case f.unsigned:
		newStates[sumUintState](dst, sumUintState{sumIntState{col: f.col}})
	default:
		newStates[sumIntState](dst, sumIntState{col: f.col})
	}
}

func (f *avgFunc) NewStates(dst []State) {
	switch {
	case f.float:
		newStates[avgFloatState](dst, avgFloatState{col: f.col})
	case f.unsigned:
		newStates[avgUintState](dst, avgUintState{avgIntState{col: f.col}})
	default:
		newStates[avgIntState](dst, avgIntState{col: f.col})
	}
}

func (f *extremumFunc[T]) NewStates(dst []State) {
	newStates[extremumState[T]](dst, extremumState[T]{col: f.col, isMax: f.isMax, ops: f.ops})
}
