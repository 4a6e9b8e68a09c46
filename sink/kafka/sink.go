package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/volga-go/volga/sink"
)

// Header names set on every message.
const (
	// HeaderEpoch holds the checkpoint epoch the row belongs to (decimal).
	HeaderEpoch = "volga-epoch"
	// HeaderSeq holds the row's sequence number within its epoch
	// (decimal, from 0).
	HeaderSeq = "volga-seq"
	// HeaderID holds the row identity (the JSON of the ID columns) when
	// SinkConfig.IDColumns is set.
	HeaderID = "volga-id"
)

// Defaults of the SinkConfig fields left zero.
const (
	DefaultBatchSize    = 1000
	DefaultBatchTimeout = 10 * time.Millisecond
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("sink/kafka: closed")

// SinkConfig configures a Sink. Brokers and Topic are required.
type SinkConfig struct {
	// Brokers are the bootstrap addresses (host:port).
	Brokers []string
	// Topic receives the rows; it must exist unless AllowAutoTopicCreation.
	Topic string

	// KeyColumns are the columns making the message key: the PARTITION BY
	// key, so that all rows of a key land in one partition, in order. One
	// column gives its JSON value as the key ("alice", 42, null), several
	// a JSON array of them (["alice",42]). Empty: messages have no key and
	// are spread over the partitions.
	KeyColumns []string
	// IDColumns, when set, give each row a stable identity, rendered like
	// the key into the volga-id header, for consumers that drop
	// duplicates by identity.
	IDColumns []string

	// Balancer picks a message's partition; the default is kafka-go's
	// Murmur2Balancer, which places keys as the Java client's default
	// partitioner does (so Kafka Streams and other consumers agree).
	Balancer kafkago.Balancer
	// BatchSize is the most messages per produce request and partition
	// (default 1000); BatchBytes the most bytes (default 1 MiB).
	BatchSize  int
	BatchBytes int64
	// BatchTimeout is how long a partial batch waits for more messages
	// before it is sent (default 10ms).
	BatchTimeout time.Duration
	// RequiredAcks is the acknowledgement a write waits for: RequireAll
	// (the default) or RequireOne. RequireNone, whose value is 0, reads as
	// the default: unacknowledged writes could not keep the sink's
	// at-least-once promise.
	RequiredAcks kafkago.RequiredAcks
	// Compression of the produced batches (default none).
	Compression kafkago.Compression
	// AllowAutoTopicCreation lets the first write create the topic.
	AllowAutoTopicCreation bool
	// FirstEpoch is the epoch of rows written before the first
	// PrepareCommit. After a recovery, Recover sets the epoch following the
	// restored checkpoint, so that replayed rows carry the same
	// (volga-epoch, volga-seq) as the first time.
	FirstEpoch uint64

	// Dialer configures connections (TLS, SASL, client ID, timeout); nil
	// uses plain TCP.
	Dialer *kafkago.Dialer
}

// Sink writes rows to a Kafka topic, one JSON object per message. It
// implements sink.Sink and sink.Committer.
//
// Delivery is at least once: Write returns once the brokers acknowledged
// every message (RequiredAcks), but kafka-go has no transactions, so the
// rows written since the last completed checkpoint are written again
// after a recovery. Every message carries the headers volga-epoch and
// volga-seq (and volga-id with IDColumns); with a deterministic pipeline a
// replayed row has the same values as its first copy, so consumers can
// drop duplicates by volga-id exactly, or by (volga-epoch, volga-seq) up
// to the replay's first checkpoint barrier (see the package doc).
type Sink struct {
	cfg       SinkConfig
	w         *kafkago.Writer
	transport *kafkago.Transport

	mu       sync.Mutex
	resolved *arrow.Schema // schema the column indexes were resolved for
	keys     []int
	idcols   []int
	names    [][]byte // per column: `"name":`
	epoch    uint64
	seq      uint64
	closed   bool
	buf      []byte
}

// NewSink returns a sink writing to cfg.Topic. It does not connect until
// the first Write. The sink must be closed.
func NewSink(cfg SinkConfig) (*Sink, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("sink/kafka: SinkConfig.Brokers is empty")
	}
	if cfg.Topic == "" {
		return nil, errors.New("sink/kafka: SinkConfig.Topic is empty")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.BatchBytes <= 0 {
		cfg.BatchBytes = 1 << 20
	}
	if cfg.BatchTimeout <= 0 {
		cfg.BatchTimeout = DefaultBatchTimeout
	}
	if cfg.RequiredAcks == 0 {
		cfg.RequiredAcks = kafkago.RequireAll
	}
	if cfg.Balancer == nil {
		cfg.Balancer = &kafkago.Murmur2Balancer{}
	}
	t := &kafkago.Transport{}
	if d := cfg.Dialer; d != nil {
		t.TLS, t.SASL, t.ClientID = d.TLS, d.SASLMechanism, d.ClientID
		if d.Timeout > 0 {
			t.DialTimeout = d.Timeout
		}
	}
	s := &Sink{cfg: cfg, transport: t, epoch: cfg.FirstEpoch}
	s.w = &kafkago.Writer{
		Addr:                   kafkago.TCP(cfg.Brokers...),
		Topic:                  cfg.Topic,
		Balancer:               cfg.Balancer,
		BatchSize:              cfg.BatchSize,
		BatchBytes:             cfg.BatchBytes,
		BatchTimeout:           cfg.BatchTimeout,
		RequiredAcks:           cfg.RequiredAcks,
		Compression:            cfg.Compression,
		AllowAutoTopicCreation: cfg.AllowAutoTopicCreation,
		Transport:              t,
	}
	return s, nil
}

// resolve finds the key and ID columns in schema (once per schema).
func (s *Sink) resolve(schema *arrow.Schema) error {
	if s.resolved != nil && s.resolved.Equal(schema) {
		return nil
	}
	find := func(what string, names []string) ([]int, error) {
		out := make([]int, len(names))
		for i, n := range names {
			idx := schema.FieldIndices(n)
			if len(idx) != 1 {
				return nil, fmt.Errorf("sink/kafka: %s column %q: %d columns of that name in %s", what, n, len(idx), schema)
			}
			out[i] = idx[0]
		}
		return out, nil
	}
	keys, err := find("key", s.cfg.KeyColumns)
	if err != nil {
		return err
	}
	ids, err := find("ID", s.cfg.IDColumns)
	if err != nil {
		return err
	}
	names := make([][]byte, schema.NumFields())
	for i, f := range schema.Fields() {
		b, err := json.Marshal(f.Name)
		if err != nil {
			return fmt.Errorf("sink/kafka: column name %q: %w", f.Name, err)
		}
		names[i] = append(b, ':')
	}
	s.resolved, s.keys, s.idcols, s.names = schema, keys, ids, names
	return nil
}

// appendTuple renders the columns cols of row i: one column as its JSON
// value, several as a JSON array.
func appendTuple(dst []byte, rec arrow.RecordBatch, cols []int, i int) []byte {
	if len(cols) == 1 {
		return sink.AppendJSON(dst, rec.Column(cols[0]), i)
	}
	dst = append(dst, '[')
	for n, c := range cols {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = sink.AppendJSON(dst, rec.Column(c), i)
	}
	return append(dst, ']')
}

// Write sends every row of rec as a message and returns once all are
// acknowledged. On error some rows may have been written; the engine
// recovers from its last checkpoint, writing them again (at least once).
func (s *Sink) Write(ctx context.Context, rec arrow.RecordBatch) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if rec == nil || rec.NumRows() == 0 {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("sink/kafka: topic %q: internal error: %v", s.cfg.Topic, r)
		}
	}()
	if err := s.resolve(rec.Schema()); err != nil {
		return err
	}
	n := int(rec.NumRows())
	msgs := make([]kafkago.Message, n)
	epoch := strconv.AppendUint(nil, s.epoch, 10)
	// One buffer for all the bytes of the batch; messages slice into it.
	buf := s.buf[:0]
	type span struct{ v, k, id, seq [2]int }
	spans := make([]span, n)
	for i := range n {
		var sp span
		start := len(buf)
		buf = append(buf, '{')
		for c := range int(rec.NumCols()) {
			if c > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, s.names[c]...)
			buf = sink.AppendJSON(buf, rec.Column(c), i)
		}
		buf = append(buf, '}')
		sp.v = [2]int{start, len(buf)}
		if len(s.keys) > 0 {
			start = len(buf)
			buf = appendTuple(buf, rec, s.keys, i)
			sp.k = [2]int{start, len(buf)}
		}
		if len(s.idcols) > 0 {
			start = len(buf)
			buf = appendTuple(buf, rec, s.idcols, i)
			sp.id = [2]int{start, len(buf)}
		}
		start = len(buf)
		buf = strconv.AppendUint(buf, s.seq+uint64(i), 10)
		sp.seq = [2]int{start, len(buf)}
		spans[i] = sp
	}
	for i, sp := range spans {
		m := &msgs[i]
		m.Value = buf[sp.v[0]:sp.v[1]:sp.v[1]]
		if len(s.keys) > 0 {
			m.Key = buf[sp.k[0]:sp.k[1]:sp.k[1]]
		}
		m.Headers = make([]kafkago.Header, 2, 3)
		m.Headers[0] = kafkago.Header{Key: HeaderEpoch, Value: epoch}
		m.Headers[1] = kafkago.Header{Key: HeaderSeq, Value: buf[sp.seq[0]:sp.seq[1]:sp.seq[1]]}
		if len(s.idcols) > 0 {
			m.Headers = append(m.Headers, kafkago.Header{Key: HeaderID, Value: buf[sp.id[0]:sp.id[1]:sp.id[1]]})
		}
	}
	s.seq += uint64(n)
	// kafka-go holds the bytes until they are sent. A successful
	// WriteMessages has sent them all, so the buffer can serve the next
	// Write; after an error (a cancelled ctx) some may still be in flight.
	err = s.w.WriteMessages(ctx, msgs...)
	if err == nil && cap(buf) <= 4<<20 {
		s.buf = buf
	} else {
		s.buf = nil
	}
	if err != nil {
		var werrs kafkago.WriteErrors
		if errors.As(err, &werrs) {
			err = summarize(werrs)
		}
		return fmt.Errorf("sink/kafka: topic %q: writing %d rows: %w", s.cfg.Topic, n, err)
	}
	return nil
}

// writeError is the error of a Write whose messages failed. Its text
// gives each distinct error once, with the number of messages it failed;
// kafka-go's WriteErrors repeats the error of every message, so that a
// batch of 1000 rows refused by the broker made an error line of 1000
// copies. It unwraps to the WriteErrors (for errors.As) and to each
// distinct error (for errors.Is, such as kafka-go's MessageSizeTooLarge).
type writeError struct {
	msg  string
	errs []error
}

func (e *writeError) Error() string   { return e.msg }
func (e *writeError) Unwrap() []error { return e.errs }

// summarize returns the writeError of werrs.
func summarize(werrs kafkago.WriteErrors) error {
	const shown = 3
	var distinct []error
	counts := map[string]int{}
	for _, e := range werrs {
		if e == nil {
			continue
		}
		k := e.Error()
		if counts[k] == 0 {
			distinct = append(distinct, e)
		}
		counts[k]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d messages failed: ", werrs.Count(), len(werrs))
	for i, e := range distinct[:min(len(distinct), shown)] {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (%d)", e.Error(), counts[e.Error()])
	}
	if len(distinct) > shown {
		fmt.Fprintf(&b, "; and %d other errors", len(distinct)-shown)
	}
	return &writeError{msg: b.String(), errs: append([]error{werrs}, distinct...)}
}

// PrepareCommit ends epoch: every row written before it has been
// acknowledged (Write is synchronous), and the rows written next belong
// to epoch+1, numbered again from 0. It implements sink.Committer so the
// engine can stamp epochs on the messages; it does not make the topic
// transactional, returns no state, and Commit has nothing left to do.
func (s *Sink) PrepareCommit(ctx context.Context, epoch uint64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.epoch, s.seq = epoch+1, 0
	return nil, nil
}

// Commit does nothing: the rows of epoch were already delivered (see
// PrepareCommit).
func (s *Sink) Commit(ctx context.Context, epoch uint64) error { return nil }

// Recover prepares a restart from the checkpoint of epoch: the rows
// written next belong to epoch+1, numbered from 0, so that replayed rows
// carry the same volga-epoch and volga-seq headers as their first copies.
// It cannot take back the messages of later epochs already in the topic:
// the sink is at least once.
func (s *Sink) Recover(ctx context.Context, epoch uint64, state []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.epoch, s.seq = epoch+1, 0
	return nil
}

// Epoch returns the epoch that the next rows written will carry.
func (s *Sink) Epoch() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// Close flushes nothing (every Write has completed), releases the
// connections and waits for the writer's goroutines. Closing twice is a
// no-op.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.w.Close()
	s.transport.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("sink/kafka: close: %w", err)
	}
	return nil
}

var (
	_ sink.Sink      = (*Sink)(nil)
	_ sink.Committer = (*Sink)(nil)
)
