package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// positionVersion tags the encoding of positions, so that a checkpoint
// written by another version is rejected instead of misread.
const positionVersion = 1

// encodePosition encodes the next offset to read of each partition:
//
//	version (1 byte) | uvarint len(topic) | topic | uvarint n |
//	n × (uvarint partition | varint offset), partitions ascending
func encodePosition(topic string, next map[int]int64) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64*(2+2*len(next))+len(topic))
	b = append(b, positionVersion)
	b = binary.AppendUvarint(b, uint64(len(topic)))
	b = append(b, topic...)
	b = binary.AppendUvarint(b, uint64(len(next)))
	for _, p := range slices.Sorted(maps.Keys(next)) {
		b = binary.AppendUvarint(b, uint64(p))
		b = binary.AppendVarint(b, next[p])
	}
	return b
}

var errPosition = errors.New("source/kafka: invalid position")

// decodePosition decodes a position of topic.
func decodePosition(topic string, b []byte) (map[int]int64, error) {
	if len(b) == 0 || b[0] != positionVersion {
		return nil, fmt.Errorf("%w: unknown encoding", errPosition)
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, errPosition
	}
	b = b[k:]
	if got := string(b[:n]); got != topic {
		return nil, fmt.Errorf("%w: it is a position of topic %q, not %q", errPosition, got, topic)
	}
	b = b[n:]
	count, k := binary.Uvarint(b)
	if k <= 0 || count > uint64(len(b)) {
		return nil, errPosition
	}
	b = b[k:]
	next := make(map[int]int64, count)
	for range count {
		p, k := binary.Uvarint(b)
		if k <= 0 || p > 1<<31-1 {
			return nil, errPosition
		}
		b = b[k:]
		off, k := binary.Varint(b)
		if k <= 0 || off < 0 {
			return nil, errPosition
		}
		b = b[k:]
		next[int(p)] = off
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errPosition, len(b))
	}
	return next, nil
}

// DecodePosition returns the next offset to read of each partition
// recorded in pos, a Position of a source of topic.
func DecodePosition(topic string, pos []byte) (map[int]int64, error) {
	return decodePosition(topic, pos)
}
