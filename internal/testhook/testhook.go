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

// checkpointEncode holds the function SetCheckpointEncode sets.
var checkpointEncode atomic.Pointer[func(id int32)]

// CheckpointEncode calls the function set by SetCheckpointEncode, if any.
// The encoder of a window operator's checkpoint calls it after it has
// taken key id, before it encodes the key's state.
func CheckpointEncode(id int32) {
	if f := checkpointEncode.Load(); f != nil {
		(*f)(id)
	}
}

// SetCheckpointEncode sets the function CheckpointEncode calls until the
// returned function undoes it.
func SetCheckpointEncode(f func(id int32)) (undo func()) {
	old := checkpointEncode.Swap(&f)
	return func() { checkpointEncode.Store(old) }
}
