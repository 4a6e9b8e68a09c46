package kafka

import (
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
)

// TestConsumeFetchEmptyBatch: a fetch answer holding only a record batch
// with no records left (what compaction can leave at the end of a
// partition) makes no progress but counts the batch, so that the reader
// pauses before it asks again instead of looping; a batch with records
// moves the offset past them, skipping those before it.
func TestConsumeFetchEmptyBatch(t *testing.T) {
	s := &Source{cfg: Config{Topic: "t"}}
	answer := func(batches ...protocol.RecordReader) *fetchapi.ResponsePartition {
		return &fetchapi.ResponsePartition{RecordSet: protocol.RecordSet{Records: &protocol.RecordStream{Records: batches}}}
	}
	var got []int64
	emit := func(m kafkago.Message) bool { got = append(got, m.Offset); return true }

	next, more, n, err := s.consumeFetch(0, answer(&protocol.RecordBatch{BaseOffset: 10, Records: protocol.NewRecordReader()}), 10, -1, emit)
	if err != nil || next != 10 || !more || n != 1 || len(got) != 0 {
		t.Fatalf("empty batch: next %d, more %v, %d batches, emitted %v, %v; want 10, true, 1, none", next, more, n, got, err)
	}
	now := time.Unix(1_700_000_000, 0)
	recs := protocol.NewRecordReader(
		protocol.Record{Offset: 9, Time: now, Value: protocol.NewBytes([]byte(`{}`))},
		protocol.Record{Offset: 10, Time: now, Value: protocol.NewBytes([]byte(`{}`))},
		protocol.Record{Offset: 12, Time: now, Value: protocol.NewBytes([]byte(`{}`))},
	)
	next, more, n, err = s.consumeFetch(0, answer(&protocol.RecordBatch{BaseOffset: 9, Records: recs}), 10, -1, emit)
	if err != nil || next != 13 || !more || n != 1 || len(got) != 2 || got[0] != 10 || got[1] != 12 {
		t.Fatalf("records: next %d, more %v, %d batches, emitted %v, %v; want 13, true, 1, [10 12]", next, more, n, got, err)
	}
	next, more, n, err = s.consumeFetch(0, &fetchapi.ResponsePartition{}, 13, -1, emit)
	if err != nil || next != 13 || !more || n != 0 {
		t.Fatalf("no records: next %d, more %v, %d batches, %v; want 13, true, 0", next, more, n, err)
	}
}
