package kafka

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/volga-go/volga/source"
)

// Where a partition without a position starts (Config.StartOffset).
const (
	// FirstOffset starts at the oldest message retained in the partition.
	FirstOffset = kafkago.FirstOffset
	// LastOffset starts after the newest message: only messages produced
	// later are read.
	LastOffset = kafkago.LastOffset
)

// Encodings of message values (Config.Format).
const (
	// FormatJSON is a JSON object per message.
	FormatJSON = "json"
	// FormatAvro is an Avro record per message.
	FormatAvro = "avro"
)

// Defaults of the Config fields left zero.
const (
	DefaultBatchSize  = 4096
	DefaultMaxWait    = 100 * time.Millisecond
	DefaultIdleWake   = time.Second
	DefaultSampleSize = 1000
	DefaultTimeColumn = "event_time"
	// DefaultSampleTimeout bounds reading the sample for schema inference.
	DefaultSampleTimeout = 10 * time.Second
)

// Config configures a Source. Brokers and Topic are required.
type Config struct {
	// Brokers are the bootstrap addresses (host:port).
	Brokers []string
	// Topic is the topic to read.
	Topic string

	// GroupID, when set, reads through this consumer group: the group
	// assigns partitions to the members (processes) that share the ID,
	// a partition starts at the group's committed offset, and Commit
	// stores offsets in the group. Without it every partition is read
	// directly, starting at StartOffset or at the offsets given to Seek.
	GroupID string

	// Partitions, when not empty, limits reading to these partitions of
	// the topic, read directly (it excludes GroupID): each starts at
	// StartOffset or at the offset given to Seek, and Position covers only
	// them. A member of a volga.Group reads each partition it is assigned
	// with a source of its own this way. Partitions() then reports
	// len(Partitions): the engine keeps a watermark for each of those
	// only (TopicPartitions reports the topic's count).
	Partitions []int

	// HeartbeatInterval and SessionTimeout tune group membership
	// (defaults 3s and 30s, kafka-go's): a member learns of a rebalance at
	// its next heartbeat, and one that stops heartbeating for the session
	// timeout loses its partitions.
	HeartbeatInterval time.Duration
	SessionTimeout    time.Duration

	// StartOffset is where a partition starts when there is no position
	// for it (no Seek, no committed group offset): FirstOffset (the
	// default) or LastOffset. It is resolved to an offset when reading
	// starts (in a group: when the partition is assigned), and Position
	// holds that offset from then on.
	StartOffset int64

	// Format is how message values are encoded: FormatJSON (the
	// default: one JSON object per message) or FormatAvro (an Avro
	// record per message, see SchemaRegistry and AvroSchema). Avro
	// records decode by field name into the columns as JSON objects do
	// by key, so Schema, TimeField and the rest mean the same for both.
	Format string
	// SchemaRegistry is the URL of a Confluent-compatible schema registry
	// (http://host:8081; https, and user:password@ for basic
	// authentication) for Format "avro" values framed as Confluent's
	// serializers write them: a zero byte, the 4-byte big-endian id of
	// the writer's schema in the registry, then the record's binary
	// encoding. Each value is decoded with its own writer's schema
	// (fetched once per id), so a topic whose schema evolves reads on:
	// fields are matched to columns by name, a field the writer's schema
	// lacks is NULL. A value not so framed, or whose id the registry does
	// not have, is a dead letter; a registry that cannot be reached (after
	// three more tries) fails Read without consuming the messages.
	// Schemas that refer to other schemas are not read.
	SchemaRegistry string
	// AvroSchema is the writer's schema (JSON text) of Format "avro"
	// values written bare, without a registry's framing.
	AvroSchema string
	// RegistryClient makes the schema registry's requests (default: an
	// http.Client with a 10 s timeout).
	RegistryClient *http.Client

	// Schema is the schema of the JSON values: keys are matched to fields
	// by name, a missing key is NULL, other keys are ignored. Supported
	// field types: signed and unsigned integers, float32/float64, bool,
	// string, large_string, timestamp (any unit; RFC 3339 strings or
	// integers in the column's unit) and date32 (2006-01-02). When nil the
	// schema is inferred from a sample (see SampleSize); with Format
	// "avro", it is the columns of the newest writer's schema in the
	// sample (the greatest id), or of AvroSchema: boolean, int, long,
	// float, double and string as themselves, timestamp-millis and
	// -micros as timestamps, date as date32, decimal as float64, enum as
	// string, a union of null and one type as that type, a union of
	// several types as a string holding the value's text, and any other
	// field (bytes, fixed, records, arrays, maps) as a string holding the
	// value's JSON text.
	Schema *arrow.Schema
	// SampleSize is how many messages are read to infer the schema
	// (default 1000): the newest messages present when NewSource runs,
	// shared out over the partitions. Inference follows the JSON-lines
	// source: integers are int64, other numbers float64 (both mixed:
	// float64), true/false bool, RFC 3339 strings timestamp[ms, UTC], and
	// everything else (other strings, objects and arrays kept as their
	// JSON text, other mixes, fields seen only as null) string. Columns
	// come in the order the keys were first seen.
	SampleSize int
	// SampleTimeout bounds reading the sample (default 10s); the schema is
	// inferred from what arrived by then.
	SampleTimeout time.Duration

	// TimeField names the JSON field holding event time; it must be a
	// timestamp (RFC 3339 strings) or int64 (epoch milliseconds) field. A
	// message where it is missing or null is a dead letter. When empty,
	// event time is the message timestamp, put in a timestamp[ms, UTC]
	// column named TimeColumn appended to the JSON fields.
	TimeField string
	// TimeColumn names the message-timestamp column when TimeField is
	// empty (default "event_time").
	TimeColumn string

	// BatchSize is the most rows in a batch (default 4096).
	BatchSize int
	// MaxWait is how long a partition's rows may wait for more before
	// Read returns them in a smaller batch (default 100ms), so that a
	// quiet topic still makes progress.
	MaxWait time.Duration
	// IdleWake is how long Read waits with no row to return before it
	// returns an empty batch (no rows, no partition) instead, so that the
	// engine does the work that depends on wall-clock time on a quiet
	// topic: a partition silent for longer than the idle timeout stops
	// holding the watermark back, and the rows it held go out; a
	// checkpoint due is taken (default 1s; negative: Read blocks until
	// there are rows).
	IdleWake time.Duration

	// StopAtEnd makes the source bounded: each partition is read up to
	// the high-water mark it had when NewSource ran, then Read returns
	// io.EOF. With a consumer group, io.EOF comes once every partition
	// assigned to this member has reached its mark. (The source reads
	// committed messages only, so the mark is the last stable offset: the
	// messages of a transaction still open at the start are not read.)
	StopAtEnd bool

	// DeadLetter receives the messages that cannot be decoded (a
	// tombstone, not a JSON object, invalid UTF-8, a value of the wrong
	// type for its field, no event time).
	// They are counted (DeadLetters) whether or not it is set.
	DeadLetter source.DeadLetterFunc
	// DeadLetterTopic, when set, also receives a copy of each such message
	// (same key and value, the original headers, plus headers
	// volga-dead-letter-reason, -topic, -partition and -offset).
	DeadLetterTopic string

	// Dialer configures connections (TLS, SASL, client ID, timeouts);
	// nil uses kafka-go's default dialer.
	Dialer *kafkago.Dialer
	// Allocator allocates the Arrow batches (default memory.DefaultAllocator).
	Allocator memory.Allocator
	// Logger receives client errors that the source retries (a failed
	// group join, a broken connection); nil discards them.
	Logger *slog.Logger
}

func (c *Config) defaults() error {
	if len(c.Brokers) == 0 {
		return errors.New("source/kafka: Config.Brokers is empty")
	}
	if c.Topic == "" {
		return errors.New("source/kafka: Config.Topic is empty")
	}
	switch c.StartOffset {
	case 0:
		c.StartOffset = FirstOffset
	case FirstOffset, LastOffset:
	default:
		return errors.New("source/kafka: Config.StartOffset must be FirstOffset or LastOffset")
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.MaxWait <= 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.IdleWake == 0 {
		c.IdleWake = DefaultIdleWake
	}
	if c.SampleSize <= 0 {
		c.SampleSize = DefaultSampleSize
	}
	if c.SampleTimeout <= 0 {
		c.SampleTimeout = DefaultSampleTimeout
	}
	if c.TimeColumn == "" {
		c.TimeColumn = DefaultTimeColumn
	}
	if c.Allocator == nil {
		c.Allocator = memory.DefaultAllocator
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.GroupID != "" && len(c.Partitions) > 0 {
		return errors.New("source/kafka: Config.Partitions and Config.GroupID exclude each other")
	}
	seen := map[int]bool{}
	for _, p := range c.Partitions {
		if p < 0 || seen[p] {
			return fmt.Errorf("source/kafka: Config.Partitions: partition %d is negative or repeated", p)
		}
		seen[p] = true
	}
	if c.DeadLetterTopic == c.Topic {
		return errors.New("source/kafka: Config.DeadLetterTopic must differ from Config.Topic")
	}
	return nil
}

// transport returns a kafka-go transport matching the dialer.
func (c *Config) transport() *kafkago.Transport {
	t := &kafkago.Transport{}
	if d := c.Dialer; d != nil {
		t.TLS = d.TLS
		t.SASL = d.SASLMechanism
		t.ClientID = d.ClientID
		if d.Timeout > 0 {
			t.DialTimeout = d.Timeout
		}
	}
	return t
}
