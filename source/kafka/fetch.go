package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
)

// Fetch settings of the partition readers.
const (
	fetchMaxBytes   = 10 << 20
	fetchMaxWait    = 250 * time.Millisecond
	fetchBackoffMin = 50 * time.Millisecond
	fetchBackoffMax = time.Second
	// fetchAttempts is how many times in a row a fetch failing with an
	// error that Kafka does not call retriable is tried before it ends
	// reading.
	fetchAttempts = 3
)

// Control record types (the key of a record in a control batch).
const controlAbort = 0

// fetchPartition reads partition p from offset from (not a sentinel) with
// isolation level read_committed, and calls emit with each data message in
// offset order. Unlike kafka-go's Reader, it hides the control records
// that end transactions and skips the messages of aborted transactions,
// as the Java consumer does. It returns nil once the next offset reaches
// end (end < 0: never) or emit returns false, ctx.Err() when ctx is done,
// and an error naming the offset when the partition cannot be read from
// there: an offset out of range is never skipped silently.
func (s *Source) fetchPartition(ctx context.Context, p int, from, end int64, emit func(kafkago.Message) bool) error {
	offset := from
	failures := 0
	for {
		if end >= 0 && offset >= end {
			return nil
		}
		part, err := s.fetchOnce(ctx, p, offset)
		if err == nil && part.ErrorCode != 0 {
			err = kafkago.Error(part.ErrorCode)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, kafkago.OffsetOutOfRange) {
				why := "older ones were deleted by retention, or the offset is from another incarnation of the topic"
				switch {
				case part == nil:
					return fmt.Errorf("offset %d is out of range: %w", offset, err)
				case part.LogStartOffset >= part.HighWatermark:
					return fmt.Errorf("offset %d is out of range: the partition holds no message, its next offset is %d (%s): %w",
						offset, part.HighWatermark, why, err)
				default:
					return fmt.Errorf("offset %d is out of range: the partition holds offsets %d to %d (%s): %w",
						offset, part.LogStartOffset, part.HighWatermark-1, why, err)
				}
			}
			failures++
			if kerr, ok := errors.AsType[kafkago.Error](err); ok && !kerr.Temporary() && failures >= fetchAttempts {
				return fmt.Errorf("fetching at offset %d: %w", offset, err)
			}
			s.cfg.Logger.Warn("source/kafka: fetch failed; retrying", "topic", s.cfg.Topic, "partition", p, "offset", offset, "attempt", failures, "err", err)
			backoff := min(fetchBackoffMin<<min(failures-1, 10), fetchBackoffMax)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		failures = 0
		next, more, batches, err := s.consumeFetch(p, part, offset, end, emit)
		if err != nil {
			return fmt.Errorf("reading the records at offset %d: %w", offset, err)
		}
		if more && next == offset && batches > 0 {
			// Batches, but nothing at or after offset: a batch compaction
			// emptied at the end of the partition, whose last offset the
			// protocol layer does not tell. The broker answers at once
			// with it until newer messages come: ask again after a pause,
			// not in a busy loop.
			select {
			case <-time.After(fetchMaxWait):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		offset = next
		if !more {
			return nil
		}
	}
}

// fetchOnce sends one fetch request for partition p at offset.
func (s *Source) fetchOnce(ctx context.Context, p int, offset int64) (*fetchapi.ResponsePartition, error) {
	m, err := s.transport.RoundTrip(ctx, kafkago.TCP(s.cfg.Brokers...), &fetchapi.Request{
		ReplicaID:      -1,
		MaxWaitTime:    int32(fetchMaxWait / time.Millisecond),
		MinBytes:       1,
		MaxBytes:       fetchMaxBytes,
		IsolationLevel: int8(kafkago.ReadCommitted),
		SessionID:      -1,
		SessionEpoch:   -1,
		Topics: []fetchapi.RequestTopic{{
			Topic: s.cfg.Topic,
			Partitions: []fetchapi.RequestPartition{{
				Partition:          int32(p),
				CurrentLeaderEpoch: -1,
				FetchOffset:        offset,
				LogStartOffset:     -1,
				PartitionMaxBytes:  fetchMaxBytes,
			}},
		}},
	})
	if err != nil {
		return nil, err
	}
	res, ok := m.(*fetchapi.Response)
	if !ok {
		return nil, fmt.Errorf("unexpected fetch response %T", m)
	}
	if res.ErrorCode != 0 {
		return nil, kafkago.Error(res.ErrorCode)
	}
	for i := range res.Topics {
		for j := range res.Topics[i].Partitions {
			if part := &res.Topics[i].Partitions[j]; res.Topics[i].Topic == s.cfg.Topic && int(part.Partition) == p {
				return part, nil
			}
		}
	}
	return nil, errors.New("the fetch response does not hold the partition")
}

// consumeFetch emits the data messages of a fetch response from offset on,
// and returns the offset to fetch next, whether to go on (false: end
// reached or emit refused) and how many record batches the response held.
func (s *Source) consumeFetch(p int, part *fetchapi.ResponsePartition, offset, end int64, emit func(kafkago.Message) bool) (next int64, more bool, nbatches int, err error) {
	records := part.RecordSet.Records
	if records == nil {
		return offset, true, 0, nil
	}
	batches := []protocol.RecordReader{records}
	if st, ok := records.(*protocol.RecordStream); ok {
		batches = st.Records
	}
	nbatches = len(batches)
	// The transactions aborted in this response's range, by first offset;
	// a producer's data batches are skipped from its aborted transaction's
	// first offset to the abort marker.
	pending := slices.SortedFunc(slices.Values(part.AbortedTransactions), func(a, b fetchapi.ResponseTransaction) int {
		return cmp.Compare(a.FirstOffset, b.FirstOffset)
	})
	aborting := map[int64]bool{}
	upTo := func(off int64) {
		for len(pending) > 0 && pending[0].FirstOffset <= off {
			aborting[pending[0].ProducerID] = true
			pending = pending[1:]
		}
	}
	for _, b := range batches {
		switch b := b.(type) {
		case *protocol.ControlBatch:
			upTo(b.BaseOffset)
			for {
				cr, err := b.ReadControlRecord()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return offset, false, nbatches, err
				}
				if cr.Offset < offset {
					continue
				}
				if end >= 0 && cr.Offset >= end {
					return offset, false, nbatches, nil
				}
				if cr.Type == controlAbort {
					delete(aborting, b.ProducerID)
				}
				offset = cr.Offset + 1
			}
		default:
			skip := false
			if rb, ok := b.(*protocol.RecordBatch); ok {
				upTo(rb.BaseOffset)
				skip = rb.Attributes.Transactional() && aborting[rb.ProducerID]
			}
			for {
				rec, err := b.ReadRecord()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return offset, false, nbatches, err
				}
				if rec.Offset < offset || skip || (end >= 0 && rec.Offset >= end) {
					closeRecord(rec)
					if end >= 0 && rec.Offset >= end {
						return offset, false, nbatches, nil
					}
					if rec.Offset >= offset {
						offset = rec.Offset + 1
					}
					continue
				}
				m, err := message(s.cfg.Topic, p, rec)
				if err != nil {
					return offset, false, nbatches, err
				}
				offset = rec.Offset + 1
				if !emit(m) {
					return offset, false, nbatches, nil
				}
			}
		}
	}
	return offset, true, nbatches, nil
}

// message copies a fetched record into a kafka-go message.
func message(topic string, p int, rec *protocol.Record) (kafkago.Message, error) {
	defer closeRecord(rec)
	key, err := protocol.ReadAll(rec.Key)
	if err != nil {
		return kafkago.Message{}, err
	}
	value, err := protocol.ReadAll(rec.Value)
	if err != nil {
		return kafkago.Message{}, err
	}
	m := kafkago.Message{Topic: topic, Partition: p, Offset: rec.Offset, Key: key, Value: value, Headers: rec.Headers}
	if ms := rec.Time.UnixMilli(); ms >= 0 && !rec.Time.IsZero() {
		m.Time = rec.Time.UTC() // -1: the producer set no timestamp
	}
	return m, nil
}

func closeRecord(rec *protocol.Record) {
	if rec.Key != nil {
		rec.Key.Close()
	}
	if rec.Value != nil {
		rec.Value.Close()
	}
}
