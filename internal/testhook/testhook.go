package testhook

import "sync/atomic"

// KeyForgetMin, when > 0, replaces the least number of quiet keys a
// window operator forgets at once, in the operators created while it is
// set.
var KeyForgetMin atomic.Int64

// SetKeyForgetMin sets KeyForgetMin until the returned function undoes
// it.
func SetKeyForgetMin(n int) (undo func()) {
	old := KeyForgetMin.Swap(int64(n))
	return func() { KeyForgetMin.Store(old) }
}
