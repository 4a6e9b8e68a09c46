package request

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Paths served by NewHandler.
const (
	FeaturesPath = "/v1/features"
	HealthPath   = "/healthz"
)

// DefaultMaxBodyBytes is the default limit on a request body: 1 MiB.
const DefaultMaxBodyBytes = 1 << 20

// HandlerOption configures NewHandler.
type HandlerOption func(*handler)

// WithMaxBodyBytes limits the size of a request body; a larger one is
// refused with 413. n <= 0 restores the default, DefaultMaxBodyBytes.
func WithMaxBodyBytes(n int64) HandlerOption {
	return func(h *handler) {
		if n <= 0 {
			n = DefaultMaxBodyBytes
		}
		h.maxBody = n
	}
}

// WithLogger sets where the handler logs internal errors and recovered
// panics (default: nowhere).
func WithLogger(l *slog.Logger) HandlerOption { return func(h *handler) { h.log = l } }

// NewHandler returns an HTTP handler serving svc: POST /v1/features for
// lookups and GET /healthz for liveness; see the package documentation
// for the JSON formats and status codes. Other paths answer 404. The
// handler is safe for concurrent use if svc is, and a panic in svc is
// recovered and answered with 500.
func NewHandler(svc Service, opts ...HandlerOption) http.Handler {
	h := &handler{svc: svc, maxBody: DefaultMaxBodyBytes, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(h)
	}
	return h
}

type handler struct {
	svc     Service
	maxBody int64
	log     *slog.Logger
	metrics *Metrics // nil: not instrumented
}

// statusError is an error with the HTTP status it is answered with.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &statusError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// ServeHTTP routes a request and recovers from panics.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rw := trackingPool.Get().(*trackingWriter)
	*rw = trackingWriter{ResponseWriter: w}
	// Deferred first, so it runs after everything that uses rw.
	defer func() {
		*rw = trackingWriter{}
		trackingPool.Put(rw)
	}()
	if h.metrics != nil {
		// Deferred first, so it runs last: after a panic's 500.
		defer func(start time.Time) { h.metrics.observe(r.URL.Path, rw.status, time.Since(start)) }(time.Now())
	}
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if p == http.ErrAbortHandler {
			if !rw.wrote {
				rw.status = StatusAborted // for the metrics: not a 200
			}
			panic(p)
		}
		h.log.Error("request: panic serving a lookup", "path", r.URL.Path, "panic", fmt.Sprint(p))
		if !rw.wrote {
			writeError(rw, http.StatusInternalServerError, "internal error")
		}
	}()
	switch r.URL.Path {
	case FeaturesPath:
		if r.Method != http.MethodPost {
			rw.Header().Set("Allow", http.MethodPost)
			writeError(rw, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s; use POST", r.Method, FeaturesPath))
			return
		}
		h.serveFeatures(rw, r)
	case HealthPath:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			rw.Header().Set("Allow", "GET, HEAD")
			writeError(rw, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s; use GET", r.Method, HealthPath))
			return
		}
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(rw, "ok\n")
	default:
		writeError(rw, http.StatusNotFound, fmt.Sprintf("no such path %s; lookups are POST %s", r.URL.Path, FeaturesPath))
	}
}

// lookup is one decoded lookup request.
type lookup struct {
	key map[string]any // by the service's column names
	at  time.Time
	row map[string]any
}

// wireRequest is the JSON form of a lookup request.
type wireRequest struct {
	Key map[string]any  `json:"key"`
	At  json.RawMessage `json:"at"`
	Row map[string]any  `json:"row"`
}

func (h *handler) serveFeatures(w http.ResponseWriter, r *http.Request) {
	inp := inPool.Get().(*[]byte)
	defer func() {
		if cap(*inp) <= 64<<10 {
			inPool.Put(inp)
		}
	}()
	body, err := readBody(w, r, h.maxBody, (*inp)[:0])
	if cap(body) > cap(*inp) {
		*inp = body[:0]
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", mbe.Limit))
			return
		}
		writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	body = trimJSONSpace(body)
	keyCols := h.svc.KeyColumns()
	var one [1]lookup // a single request's, without a heap allocation
	reqs := one[:0]
	batch := len(body) > 0 && body[0] == '['
	if batch {
		var raws []json.RawMessage
		if err := decodeStrict(body, &raws); err != nil {
			writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error())
			return
		}
		for i, raw := range raws {
			l, err := parseLookup(raw, keyCols)
			if err != nil {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("request %d: %v", i, err))
				return
			}
			reqs = append(reqs, l)
		}
	} else {
		l, err := parseLookup(body, keyCols)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		reqs = append(reqs, l)
	}

	bp := outPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 64<<10 {
			outPool.Put(bp)
		}
	}()
	out := (*bp)[:0]
	defer func() { *bp = out[:0] }()
	if batch {
		out = append(out, '[')
	}
	for i, l := range reqs {
		f, err := h.svc.Lookup(r.Context(), l.key, l.at, l.row)
		if err != nil {
			if resp, ok := errors.AsType[Responder](err); ok {
				resp.WriteResponse(w)
				return
			}
			status := statusOf(err)
			if r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				// The client went away (or the server cut its connection):
				// no one reads the answer, and it is no failure of the
				// service's, which a 503 would count as.
				status = StatusAborted
			}
			msg := err.Error()
			if batch {
				msg = fmt.Sprintf("request %d: %s", i, msg)
			}
			if status == http.StatusInternalServerError {
				h.log.Error("request: lookup failed", "error", err)
			}
			if status == http.StatusServiceUnavailable && r.Context().Err() == nil {
				w.Header().Set("Retry-After", "1") // not started yet: soon
			}
			writeError(w, status, msg)
			return
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = appendResult(out, keyCols, l.key, l.at, f)
	}
	if batch {
		out = append(out, ']')
	}
	out = append(out, '\n')
	w.Header()["Content-Type"] = jsonContentType
	w.Write(out)
}

// outPool recycles response buffers, inPool request bodies.
var (
	outPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}
	inPool  = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}
)

// readBody appends r's body, at most maxBody bytes of it, to buf and
// returns it: io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody)) into a
// reused buffer.
func readBody(w http.ResponseWriter, r *http.Request, maxBody int64, buf []byte) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n < maxBody {
		buf = slices.Grow(buf, int(n)+1) // +1: the read that finds the end
	}
	rd := http.MaxBytesReader(w, r.Body, maxBody)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 512)
		}
		m, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// jsonContentType is the Content-Type header value of every JSON answer,
// shared (net/http never modifies a header's value slice).
var jsonContentType = []string{"application/json"}

// statusOf maps a Service error to an HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, ErrUnavailable), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrUnsupported):
		return http.StatusNotImplemented
	}
	return http.StatusInternalServerError
}

// trimJSONSpace trims the whitespace JSON allows around a value (space,
// tab, newline, carriage return) from b; bytes.TrimSpace would also take
// \v, \f, U+0085 and U+00A0, which make a body that is not JSON.
func trimJSONSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// decodeStrict decodes exactly one JSON value, numbers as json.Number,
// unknown struct fields refused.
func decodeStrict(b []byte, v any) error {
	if len(b) == 0 {
		return errors.New("empty body; want a JSON object or an array of them")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// parseLookup decodes and checks one request object.
func parseLookup(raw []byte, keyCols []string) (lookup, error) {
	if l, ok := parseFast(raw, keyCols); ok {
		return l, nil
	}
	return parseLookupJSON(raw, keyCols)
}

// parseLookupJSON is parseLookup through encoding/json: every request the
// shortcut (parseFast) does not take, with the errors it reports.
func parseLookupJSON(raw []byte, keyCols []string) (lookup, error) {
	var wr wireRequest
	raw = trimJSONSpace(raw)
	if len(raw) > 0 && raw[0] != '{' {
		return lookup{}, badRequest("want a JSON object such as {\"key\": {...}, \"at\": \"2024-01-03T10:00:00Z\"}")
	}
	if err := decodeStrict(raw, &wr); err != nil {
		return lookup{}, badRequest("malformed JSON: %v", err)
	}
	if path, name, dup := duplicateMember(raw); dup {
		// encoding/json would keep the last one; a client that sent two
		// values meant something the lookup cannot know.
		return lookup{}, badRequest("member %q is given twice in %s", name, path)
	}
	if wr.Key == nil {
		return lookup{}, badRequest("missing \"key\": want an object with the key columns %s", strings.Join(keyCols, ", "))
	}
	key, err := matchKey(wr.Key, keyCols)
	if err != nil {
		return lookup{}, err
	}
	at, err := parseAt(wr.At)
	if err != nil {
		return lookup{}, err
	}
	var row map[string]any
	if wr.Row != nil {
		row = make(map[string]any, len(wr.Row))
		for c, v := range wr.Row {
			s, err := scalar(v)
			if err != nil {
				return lookup{}, badRequest("row column %q: %v", c, err)
			}
			row[c] = s
		}
	}
	return lookup{key: key, at: at, row: row}, nil
}

// duplicateMember finds a member name given twice in an object of raw, a
// valid JSON value, and returns the path of the object ("the request",
// "\"key\"") and the name. Names of the request object itself compare
// case-insensitively, as encoding/json matches them to fields; matchKey
// words the error for key columns that differ only in case.
func duplicateMember(raw []byte) (path, name string, dup bool) {
	type object struct {
		names    map[string]bool
		wantName bool
		path     string
	}
	var stack []*object // nil entries are arrays
	lastName := ""
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "", false // the end, or malformed (decodeStrict words that)
		}
		var top *object
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		if top != nil && top.wantName {
			if s, ok := tok.(string); ok {
				folded := s
				if len(stack) == 1 {
					folded = strings.ToLower(s)
				}
				if top.names[folded] {
					return top.path, s, true
				}
				top.names[folded] = true
				top.wantName = false
				lastName = s
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			p := "the request"
			switch {
			case top != nil:
				p = strconv.Quote(lastName)
			case len(stack) > 0:
				p = "an array element"
			}
			stack = append(stack, &object{names: map[string]bool{}, wantName: true, path: p})
			continue
		case json.Delim('['):
			stack = append(stack, nil)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: its object, if any, wants the next name.
		if n := len(stack); n > 0 && stack[n-1] != nil {
			stack[n-1].wantName = true
		}
	}
}

// matchKey maps the request's key to the service's column names (matched
// case-insensitively), refusing missing and unknown columns.
func matchKey(given map[string]any, keyCols []string) (map[string]any, error) {
	key := make(map[string]any, len(keyCols))
	for name, v := range given {
		col := ""
		for _, c := range keyCols {
			if strings.EqualFold(c, name) {
				col = c
				break
			}
		}
		if col == "" {
			return nil, badRequest("unknown key column %q; the key columns are %s", name, strings.Join(keyCols, ", "))
		}
		if _, dup := key[col]; dup {
			return nil, badRequest("key column %q is given twice", col)
		}
		s, err := scalar(v)
		if err != nil {
			return nil, badRequest("key column %q: %v", col, err)
		}
		key[col] = s
	}
	for _, c := range keyCols {
		if _, ok := key[c]; !ok {
			return nil, badRequest("missing key column %q; the key columns are %s", c, strings.Join(keyCols, ", "))
		}
	}
	return key, nil
}

// scalar turns a decoded JSON value into a lookup value: integers become
// int64 (uint64 from 2^63 to 2^64-1), other numbers float64; strings,
// booleans and null stay.
func scalar(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, nil
		}
		if n, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return n, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s is out of range", x)
		}
		return f, nil
	}
	return nil, fmt.Errorf("value %s is not a number, string, boolean or null", AppendJSON(nil, v))
}

// parseAt reads "at": an RFC 3339 string or epoch milliseconds.
func parseAt(raw json.RawMessage) (time.Time, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, badRequest("missing \"at\": want an RFC 3339 time such as \"2024-01-03T10:00:00Z\" or epoch milliseconds")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return time.Time{}, badRequest("bad \"at\": %v", err)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, badRequest("bad \"at\" %q: want an RFC 3339 time such as \"2024-01-03T10:00:00Z\"", s)
		}
		return t, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return time.Time{}, badRequest("bad \"at\" %s: want an RFC 3339 string or epoch milliseconds", raw)
	}
	ms, err := n.Int64()
	if err != nil {
		return time.Time{}, badRequest("bad \"at\" %s: epoch milliseconds must be an integer", raw)
	}
	if !atInRange(ms) {
		return time.Time{}, badRequest("bad \"at\" %s: epoch milliseconds must be a time in the years 0000 to 9999, which RFC 3339 can write", raw)
	}
	return time.UnixMilli(ms), nil
}

// The epoch milliseconds of the first and last instants RFC 3339 can
// write (0000-01-01T00:00:00Z, 9999-12-31T23:59:59.999Z): an answer
// echoes "at" in RFC 3339, and ReadLog reads it back.
const (
	minAtMillis = -62167219200000
	maxAtMillis = 253402300799999
)

// atInRange reports whether epoch milliseconds ms is a time RFC 3339
// can write.
func atInRange(ms int64) bool { return ms >= minAtMillis && ms <= maxAtMillis }

// writeError answers {"error": msg} with status.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	b := append([]byte(`{"error":`), appendString(nil, msg)...)
	w.Write(append(b, "}\n"...))
}

// trackingPool recycles the trackingWriters of ServeHTTP.
var trackingPool = sync.Pool{New: func() any { return new(trackingWriter) }}

// trackingWriter records whether a response has started, so the panic
// handler knows whether it can still send a status, and the status sent,
// for metrics.
type trackingWriter struct {
	http.ResponseWriter
	wrote  bool
	status int
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	if t.status == 0 {
		t.status = code
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wrote = true
	if t.status == 0 {
		t.status = http.StatusOK
	}
	return t.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
