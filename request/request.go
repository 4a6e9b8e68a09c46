package request

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"time"
)

// Service answers point-in-time lookups. *volga.Pipeline provides one
// through its Service method.
type Service interface {
	// Lookup returns the features of key as of time at. key maps every
	// key column to its value; row, when not nil, is a candidate row
	// (source column -> value) counted in its own frame without being
	// stored. Errors that are the caller's fault should match ErrInvalid
	// (see Invalid); ErrUnavailable means the features cannot be served
	// yet.
	Lookup(ctx context.Context, key map[string]any, at time.Time, row map[string]any) (Features, error)
	// KeyColumns are the columns a key must give, in order.
	KeyColumns() []string
}

// Watermark values with a meaning of their own.
const (
	// NoWatermark is the watermark before any row was seen.
	NoWatermark int64 = math.MinInt64
	// EndWatermark is the watermark after a bounded input ended: every
	// row is counted.
	EndWatermark int64 = math.MaxInt64
)

// Features are the features of one key at one time.
type Features struct {
	// Names are the feature names in the query's SELECT order, and Values
	// their values: nil (NULL), bool, int64, uint64, float64, string,
	// []byte, time.Time, time.Duration, []any (lists), map[string]any
	// (structs) or []MapEntry (maps, in key order), nested as the type
	// requires.
	Names  []string
	Values []any
	// Watermark is the event time, in milliseconds since the Unix epoch,
	// up to which every row is counted: NoWatermark before any row,
	// EndWatermark once a bounded input has been read to its end.
	Watermark int64
}

// Get returns the value of the named feature (case-insensitively) and
// whether there is one.
func (f Features) Get(name string) (any, bool) {
	for i, n := range f.Names {
		if strings.EqualFold(n, name) {
			return f.Values[i], true
		}
	}
	return nil, false
}

// MapEntry is one entry of a map-valued feature (such as count_cate).
type MapEntry struct {
	Key   any
	Value any
}

var (
	// ErrInvalid marks a request the caller got wrong: the handler answers
	// 400 Bad Request.
	ErrInvalid = errors.New("invalid request")
	// ErrUnavailable marks a lookup that cannot be served yet, such as
	// one before the pipeline started: the handler answers 503 Service
	// Unavailable.
	ErrUnavailable = errors.New("features unavailable")
	// ErrUnsupported marks a lookup the service cannot answer for any
	// request, such as one of a pipeline whose query has an UNBOUNDED
	// PRECEDING frame: the handler answers 501 Not Implemented.
	ErrUnsupported = errors.New("lookup not supported")
)

// Invalid marks err as the caller's mistake: errors.Is(Invalid(err),
// ErrInvalid) holds, and the message is err's own. Invalid(nil) is nil.
func Invalid(err error) error {
	if err == nil {
		return nil
	}
	return &kindError{err: err, kind: ErrInvalid}
}

// Unavailable marks err as a temporary inability to serve (see
// ErrUnavailable). Unavailable(nil) is nil.
func Unavailable(err error) error {
	if err == nil {
		return nil
	}
	return &kindError{err: err, kind: ErrUnavailable}
}

// Unsupported marks err as a lookup the service can never answer (see
// ErrUnsupported). Unsupported(nil) is nil.
func Unsupported(err error) error {
	if err == nil {
		return nil
	}
	return &kindError{err: err, kind: ErrUnsupported}
}

// Responder is an error of a Service's Lookup that writes the HTTP
// answer to its request itself, status, headers and body, in place of
// NewHandler's {"error": ...} with the status of the error's kind (the
// handler finds it with errors.As, through Invalid, Unavailable and
// Unsupported too): a volga.Group's NotOwnerError answers 421
// Misdirected Request naming the owner of the key's partition. As with
// any error, the first lookup of a batch that fails answers for the
// whole batch.
type Responder interface {
	error
	// WriteResponse writes the answer to w: it sets any headers, then
	// calls w.WriteHeader and writes the body.
	WriteResponse(w http.ResponseWriter)
}

// kindError classifies an error without changing its message.
type kindError struct {
	err, kind error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }
