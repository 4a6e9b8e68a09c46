package kafka

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/hamba/avro/v2"

	"github.com/volga-go/volga/internal/textrow"
)

// avroValues decodes Avro message values: framed as Confluent's
// serializers write them (a zero byte, the big-endian 4-byte id of the
// writer's schema in the registry, the binary encoding) when reg is set,
// else bare binary encodings of schema.
type avroValues struct {
	reg    *registry
	schema avro.Schema
}

// newAvroValues returns the decoder Config asks for, or nil for JSON.
func newAvroValues(c *Config) (*avroValues, error) {
	switch c.Format {
	case "", FormatJSON:
		if c.SchemaRegistry != "" || c.AvroSchema != "" {
			return nil, errors.New("source/kafka: Config.SchemaRegistry and AvroSchema are for Format \"avro\"")
		}
		return nil, nil
	case FormatAvro:
	default:
		return nil, fmt.Errorf("source/kafka: Config.Format %q: use %q or %q", c.Format, FormatJSON, FormatAvro)
	}
	switch {
	case c.SchemaRegistry != "" && c.AvroSchema != "":
		return nil, errors.New("source/kafka: set one of Config.SchemaRegistry (values framed with a schema id) and AvroSchema (bare values), not both")
	case c.SchemaRegistry != "":
		reg, err := newRegistry(c.SchemaRegistry, c.RegistryClient)
		if err != nil {
			return nil, err
		}
		return &avroValues{reg: reg}, nil
	case c.AvroSchema != "":
		s, err := parseAvro(c.AvroSchema)
		if err != nil {
			return nil, fmt.Errorf("source/kafka: Config.AvroSchema: %w", err)
		}
		return &avroValues{schema: s}, nil
	default:
		return nil, errors.New("source/kafka: Format \"avro\" needs Config.SchemaRegistry (values framed with a schema id, as Confluent's serializers write them) or AvroSchema (bare values of that schema)")
	}
}

// avroAPI decodes with bounds on what a value can make it allocate: a
// damaged or hostile value claiming a billion array items or a string of
// a terabyte is refused, not allocated.
var avroAPI = avro.Config{
	MaxByteSliceSize:  16 << 20,
	MaxSliceAllocSize: 1 << 20,
}.Freeze()

// parseAvro parses a schema on its own, so that named types of one
// schema never stand for those of another (hamba/avro's default cache is
// global).
func parseAvro(text string) (avro.Schema, error) {
	return avro.ParseWithCache(text, "", &avro.SchemaCache{})
}

// frameID returns the schema id of a framed value.
func frameID(value []byte) (uint32, error) {
	if len(value) < 5 || value[0] != 0 {
		return 0, errors.New("not a schema-registry Avro value (it must start with a zero byte and a 4-byte schema id)")
	}
	return binary.BigEndian.Uint32(value[1:5]), nil
}

// resolve fetches the schemas of the framed values among msgs that the
// registry has not given yet, so that decoding them needs no network. An
// error is the registry's (unreachable, failing): the messages are not
// consumed.
func (a *avroValues) resolve(ctx context.Context, values [][]byte) error {
	if a.reg == nil {
		return nil
	}
	for _, v := range values {
		if id, err := frameID(v); err == nil {
			if _, err := a.reg.schema(ctx, id); err != nil && !errors.Is(err, errUnknownSchema) {
				return err
			}
		}
	}
	return nil
}

// writer returns the writer's schema of value and its binary encoding.
// It never goes to the network for a value resolve has seen.
func (a *avroValues) writer(value []byte) (avro.Schema, []byte, error) {
	if a.reg == nil {
		return a.schema, value, nil
	}
	id, err := frameID(value)
	if err != nil {
		return nil, nil, err
	}
	s, err := a.reg.schema(context.Background(), id)
	if err != nil {
		return nil, nil, err
	}
	return s, value[5:], nil
}

// decode decodes value into a record's fields by name.
func (a *avroValues) decode(value []byte) (m map[string]any, err error) {
	s, data, err := a.writer(value)
	if err != nil {
		return nil, err
	}
	if s.Type() != avro.Record {
		return nil, fmt.Errorf("the writer's schema is a %s, not a record", s.Type())
	}
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("undecodable Avro: %v", p)
		}
	}()
	var v any
	if err := avroAPI.Unmarshal(s, data, &v); err != nil {
		return nil, fmt.Errorf("undecodable Avro: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("undecodable Avro: a %T, not a record", v)
	}
	return m, nil
}

// inferSchema returns the columns of the newest writer's schema among the
// sampled values (the greatest schema id), or of AvroSchema.
func (a *avroValues) inferSchema(ctx context.Context, sample [][]byte) (*arrow.Schema, error) {
	s := a.schema
	if a.reg != nil {
		var best uint32
		found := false
		for _, v := range sample {
			if id, err := frameID(v); err == nil && (!found || id > best) {
				if _, err := a.reg.schema(ctx, id); err == nil {
					best, found = id, true
				} else if !errors.Is(err, errUnknownSchema) {
					return nil, err
				}
			}
		}
		if !found {
			return nil, errors.New("no sampled message is a schema-registry Avro value with a schema the registry knows; set Config.Schema")
		}
		s, _ = a.reg.schema(ctx, best)
	}
	return arrowSchemaOf(s)
}

// arrowSchemaOf returns the columns of record schema s: boolean, int,
// long, float, double and string as themselves; timestamp-millis and
// -micros (local ones too) as timestamps in UTC, date as date32, enum as
// string; a union of null and one type as that type; a union of several
// types as a string holding the value's text; any other field (bytes,
// fixed, records, arrays, maps) as a string holding the value's JSON
// text.
func arrowSchemaOf(s avro.Schema) (*arrow.Schema, error) {
	rs, ok := s.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("the writer's schema is a %s, not a record", s.Type())
	}
	fields := make([]arrow.Field, 0, len(rs.Fields()))
	for _, f := range rs.Fields() {
		fields = append(fields, arrow.Field{Name: f.Name(), Type: arrowType(f.Type()), Nullable: true})
	}
	return arrow.NewSchema(fields, nil), nil
}

func arrowType(s avro.Schema) arrow.DataType {
	if u, ok := s.(*avro.UnionSchema); ok {
		if !u.Nullable() {
			return arrow.BinaryTypes.String
		}
		for _, t := range u.Types() {
			if t.Type() != avro.Null {
				return arrowType(t)
			}
		}
	}
	if ls, ok := s.(avro.LogicalTypeSchema); ok && ls.Logical() != nil {
		switch ls.Logical().Type() {
		case avro.TimestampMillis, avro.LocalTimestampMillis:
			return &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
		case avro.TimestampMicros, avro.LocalTimestampMicros:
			return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		case avro.Date:
			return arrow.FixedWidthTypes.Date32
		case avro.Decimal:
			return arrow.PrimitiveTypes.Float64
		}
	}
	switch s.Type() {
	case avro.Boolean:
		return arrow.FixedWidthTypes.Boolean
	case avro.Int:
		return arrow.PrimitiveTypes.Int32
	case avro.Long:
		return arrow.PrimitiveTypes.Int64
	case avro.Float:
		return arrow.PrimitiveTypes.Float32
	case avro.Double:
		return arrow.PrimitiveTypes.Float64
	default:
		return arrow.BinaryTypes.String
	}
}

// setAvro makes v, a field's value as hamba/avro decodes it, the pending
// value of column c.
func setAvro(c *textrow.Column, v any) error {
	var buf [32]byte
	switch v := v.(type) {
	case nil:
		c.SetNull()
		return nil
	case bool:
		return c.Parse(textrow.Bool, strconv.FormatBool(v))
	case int:
		return c.Parse(textrow.Number, string(strconv.AppendInt(buf[:0], int64(v), 10)))
	case int32:
		return c.Parse(textrow.Number, string(strconv.AppendInt(buf[:0], int64(v), 10)))
	case int64:
		return c.Parse(textrow.Number, string(strconv.AppendInt(buf[:0], v, 10)))
	case float32:
		return c.Parse(textrow.Number, strconv.FormatFloat(float64(v), 'g', -1, 32))
	case float64:
		return c.Parse(textrow.Number, strconv.FormatFloat(v, 'g', -1, 64))
	case string:
		return c.Parse(textrow.String, v)
	case time.Time:
		switch c.Type().ID() {
		case arrow.TIMESTAMP:
			c.SetTime(v)
			return nil
		case arrow.DATE32:
			return c.Parse(textrow.String, v.UTC().Format(time.DateOnly))
		case arrow.INT64:
			return c.Parse(textrow.Number, strconv.FormatInt(v.UnixMilli(), 10))
		}
		return c.Parse(textrow.String, v.UTC().Format(time.RFC3339Nano))
	case time.Duration:
		return c.Parse(textrow.Number, strconv.FormatInt(v.Milliseconds(), 10))
	case *big.Rat:
		if id := c.Type().ID(); id == arrow.FLOAT32 || id == arrow.FLOAT64 || id == arrow.STRING || id == arrow.LARGE_STRING {
			f, _ := v.Float64()
			if id == arrow.FLOAT32 || id == arrow.FLOAT64 {
				return c.Parse(textrow.Number, strconv.FormatFloat(f, 'g', -1, 64))
			}
			return c.Parse(textrow.String, v.RatString())
		}
		if v.IsInt() {
			return c.Parse(textrow.Number, v.Num().String())
		}
		return c.Parse(textrow.Nested, v.RatString())
	}
	text, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("field %q: %v", c.Name(), err)
	}
	return c.Parse(textrow.Nested, string(text))
}

// errUnknownSchema is the reason of a value whose schema id the registry
// does not have.
var errUnknownSchema = errors.New("schema id not in the registry")

// registry reads writer schemas from a Confluent-compatible schema
// registry (GET /schemas/ids/{id}) and keeps them.
type registry struct {
	base   *url.URL
	client *http.Client

	mu      sync.Mutex
	schemas map[uint32]avro.Schema
	unknown map[uint32]bool
}

func newRegistry(raw string, client *http.Client) (*registry, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("source/kafka: Config.SchemaRegistry %q: want an http:// or https:// URL", redact(raw))
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return &registry{base: u, client: client, schemas: map[uint32]avro.Schema{}, unknown: map[uint32]bool{}}, nil
}

// redact hides a URL's password.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return u.String()
		}
	}
	return raw
}

// schema returns the schema with id: errUnknownSchema (wrapped) when the
// registry says it has none, another error when the registry cannot be
// asked. Failures are tried again three times, a little apart.
func (r *registry) schema(ctx context.Context, id uint32) (avro.Schema, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.schemas[id]; ok {
		return s, nil
	}
	if r.unknown[id] {
		return nil, fmt.Errorf("%w: %d", errUnknownSchema, id)
	}
	var err error
	for attempt := range 4 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(attempt*attempt) * 100 * time.Millisecond):
			}
		}
		var s avro.Schema
		s, err = r.fetch(ctx, id)
		switch {
		case err == nil:
			r.schemas[id] = s
			return s, nil
		case errors.Is(err, errUnknownSchema):
			r.unknown[id] = true
			return nil, err
		case errors.Is(err, errBadSchema):
			return nil, err
		}
	}
	return nil, err
}

// errBadSchema wraps a schema the registry gave that is not one the
// source reads; asking again would not help.
var errBadSchema = errors.New("registry schema")

func (r *registry) fetch(ctx context.Context, id uint32) (avro.Schema, error) {
	u := r.base.JoinPath("schemas", "ids", strconv.FormatUint(uint64(id), 10))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json, application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("source/kafka: schema registry: %s", redactErr(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("source/kafka: schema registry: schema id %d: %w", id, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%w: %d", errUnknownSchema, id)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("source/kafka: schema registry: schema id %d: %s: %s", id, resp.Status, strings.TrimSpace(string(body[:min(len(body), 200)])))
	}
	var got struct {
		Schema     string `json:"schema"`
		SchemaType string `json:"schemaType"`
		References []any  `json:"references"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		return nil, fmt.Errorf("%w id %d: the registry's answer is not JSON: %v", errBadSchema, id, err)
	}
	if got.SchemaType != "" && got.SchemaType != "AVRO" {
		return nil, fmt.Errorf("%w id %d is a %s schema, not Avro", errBadSchema, id, got.SchemaType)
	}
	if len(got.References) > 0 {
		return nil, fmt.Errorf("%w id %d refers to other schemas, which the source does not read", errBadSchema, id)
	}
	s, err := parseAvro(got.Schema)
	if err != nil {
		return nil, fmt.Errorf("%w id %d: %v", errBadSchema, id, err)
	}
	return s, nil
}

// redactErr returns err's text with a URL's password hidden.
func redactErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Sprintf("%s %q: %v", ue.Op, redact(ue.URL), ue.Err)
	}
	return err.Error()
}
