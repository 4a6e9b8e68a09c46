package pipeline

import "encoding/binary"

// hashBytes hashes an encoded key for partitioning. Unlike hash/maphash it
// has no per-process seed: a key must go to the same task in every run, as
// checkpointed window state is restored task by task (statestore/FORMAT.md,
// "Operator state"). Changing it breaks restores from older checkpoints.
func hashBytes(b []byte) uint64 {
	h := uint64(len(b)) * 0x9e3779b97f4a7c15
	for len(b) >= 8 {
		h = mix64(h ^ binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	var tail uint64
	for i, c := range b {
		tail |= uint64(c) << (8 * i)
	}
	return mix64(h ^ tail ^ 0xd6e8feb86659fd93)
}
