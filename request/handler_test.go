package request_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/volga-go/volga/request"
)

// fakeService answers every lookup with fixed features, or fails as told.
type fakeService struct {
	features request.Features
	err      error
	panicked bool
}

func (f *fakeService) KeyColumns() []string { return []string{"user_id", "shop"} }

func (f *fakeService) Lookup(ctx context.Context, key map[string]any, at time.Time, row map[string]any) (request.Features, error) {
	if f.panicked {
		panic("boom")
	}
	return f.features, f.err
}

func do(t *testing.T, h http.Handler, method, path, body string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, strings.TrimSpace(string(b))
}

const body = `{"key": {"user_id": 42, "shop": "s1"}, "at": "2024-01-03T11:00:00+01:00"}`

func TestRendering(t *testing.T) {
	ts := time.Date(2024, 1, 3, 9, 30, 0, 0, time.FixedZone("x", 3600))
	svc := &fakeService{features: request.Features{
		Names: []string{"n", "f", "nan", "inf", "s", "b", "null", "list", "map", "struct", "when", "bytes", "dur", "u"},
		Values: []any{int64(3), 12.5, math.NaN(), math.Inf(-1), "a\"b\n", true, nil,
			[]any{1.5, nil, []any{"x"}},
			[]request.MapEntry{{Key: int64(2), Value: int64(7)}, {Key: "k", Value: []request.MapEntry{}}, {Key: ts, Value: false}},
			map[string]any{"value": "v", "count": int64(2)},
			ts, []byte("hi"), 90 * time.Minute, uint64(math.MaxUint64)},
		Watermark: time.Date(2024, 1, 3, 9, 59, 58, 500e6, time.UTC).UnixMilli(),
	}}
	code, got := do(t, request.NewHandler(svc), http.MethodPost, request.FeaturesPath, body)
	want := `{"key":{"user_id":42,"shop":"s1"},"at":"2024-01-03T10:00:00Z","watermark":"2024-01-03T09:59:58.5Z","features":{` +
		`"n":3,"f":12.5,"nan":null,"inf":null,"s":"a\"b\n","b":true,"null":null,"list":[1.5,null,["x"]],` +
		`"map":{"2":7,"k":{},"2024-01-03T08:30:00Z":false},"struct":{"count":2,"value":"v"},` +
		`"when":"2024-01-03T08:30:00Z","bytes":"aGk=","dur":"1h30m0s","u":18446744073709551615}}`
	if code != 200 || got != want {
		t.Errorf("status %d\ngot  %s\nwant %s", code, got, want)
	}

	for _, tc := range []struct {
		wm   int64
		want string
	}{{request.NoWatermark, `"watermark":null`}, {request.EndWatermark, `"watermark":"+inf"`}} {
		svc := &fakeService{features: request.Features{Watermark: tc.wm}}
		if _, got := do(t, request.NewHandler(svc), http.MethodPost, request.FeaturesPath, body); !strings.Contains(got, tc.want) {
			t.Errorf("watermark %d: %s, want %s", tc.wm, got, tc.want)
		}
	}
}

func TestServiceErrors(t *testing.T) {
	for _, tc := range []struct {
		svc    *fakeService
		status int
		msg    string
	}{
		{&fakeService{err: request.Invalid(errors.New("too old"))}, 400, `{"error":"too old"}`},
		{&fakeService{err: request.Unavailable(errors.New("not started"))}, 503, `{"error":"not started"}`},
		{&fakeService{err: context.Canceled}, 503, `{"error":"context canceled"}`},
		{&fakeService{err: errors.New("disk on fire")}, 500, `{"error":"disk on fire"}`},
		{&fakeService{panicked: true}, 500, `{"error":"internal error"}`},
	} {
		code, got := do(t, request.NewHandler(tc.svc), http.MethodPost, request.FeaturesPath, body)
		if code != tc.status || got != tc.msg {
			t.Errorf("%v: status %d, %s; want %d, %s", tc.svc.err, code, got, tc.status, tc.msg)
		}
	}
	// A 503 tells the client when to try again; other errors do not.
	for _, tc := range []struct {
		err  error
		want string
	}{
		{request.Unavailable(errors.New("not started")), "1"},
		{request.Invalid(errors.New("too old")), ""},
	} {
		rec := httptest.NewRecorder()
		request.NewHandler(&fakeService{err: tc.err}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, request.FeaturesPath, strings.NewReader(body)))
		if got := rec.Header().Get("Retry-After"); got != tc.want {
			t.Errorf("%v: Retry-After %q, want %q", tc.err, got, tc.want)
		}
	}
	if !errors.Is(request.Invalid(io.EOF), io.EOF) || request.Invalid(nil) != nil || request.Unavailable(nil) != nil {
		t.Error("Invalid does not wrap")
	}
}

func TestRoutes(t *testing.T) {
	h := request.NewHandler(&fakeService{})
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, request.HealthPath, 200},
		{http.MethodHead, request.HealthPath, 200},
		{http.MethodPost, request.HealthPath, 405},
		{http.MethodGet, request.FeaturesPath, 405},
		{http.MethodGet, "/v2/features", 404},
	} {
		if code, _ := do(t, h, tc.method, tc.path, ""); code != tc.status {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, code, tc.status)
		}
	}
	small := request.NewHandler(&fakeService{}, request.WithMaxBodyBytes(10))
	if code, got := do(t, small, http.MethodPost, request.FeaturesPath, body); code != 413 {
		t.Errorf("large body: status %d, %s", code, got)
	}
}

// ExampleNewHandler serves a Service (here a fixed one; use
// (*volga.Pipeline).Service for a real pipeline) and asks for features.
func ExampleNewHandler() {
	svc := &fakeService{features: request.Features{
		Names:     []string{"spend_1h", "n_1h"},
		Values:    []any{12.5, int64(3)},
		Watermark: request.EndWatermark,
	}}
	srv := httptest.NewServer(request.NewHandler(svc))
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/v1/features", "application/json",
		strings.NewReader(`{"key": {"user_id": 42, "shop": "s1"}, "at": "2024-01-03T10:00:00Z"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status)
	fmt.Print(string(b))
	// Output:
	// 200 OK
	// {"key":{"user_id":42,"shop":"s1"},"at":"2024-01-03T10:00:00Z","watermark":"+inf","features":{"spend_1h":12.5,"n_1h":3}}
}

// TestBodyWhitespace: JSON's whitespace (space, tab, newline, carriage
// return) may surround a request; other Unicode space (\v, \f, U+0085,
// U+00A0) makes a body that is not JSON, refused as encoding/json
// refuses it.
func TestBodyWhitespace(t *testing.T) {
	h := request.NewHandler(&fakeService{features: request.Features{Watermark: request.EndWatermark}})
	batch := "[" + body + "]"
	for _, tc := range []struct {
		body   string
		status int
	}{
		{" \t\r\n" + body + "\r\n \t", 200},
		{" \t\r\n" + batch + "\r\n \t", 200},
		{"\v" + body, 400},
		{body + "\f", 400},
		{"\u00a0" + body, 400},
		{body + "\u0085", 400},
		{"\u00a0" + batch, 400},
		{batch + "\v", 400},
	} {
		if code, got := do(t, h, http.MethodPost, request.FeaturesPath, tc.body); code != tc.status {
			t.Errorf("%q: status %d, %s; want %d", tc.body, code, got, tc.status)
		}
	}
}

// teapot is a Responder: it writes its own answer.
type teapot struct{}

func (teapot) Error() string { return "short and stout" }
func (teapot) WriteResponse(w http.ResponseWriter) {
	w.Header().Set("X-Pot", "tea")
	w.WriteHeader(http.StatusTeapot)
	io.WriteString(w, "{\"pot\":true}\n")
}

// TestResponder: a Service error that is a Responder, however wrapped,
// writes the answer itself, for a single lookup and a batch.
func TestResponder(t *testing.T) {
	for _, err := range []error{teapot{}, request.Unavailable(teapot{}), request.Invalid(fmt.Errorf("wrapped: %w", teapot{}))} {
		h := request.NewHandler(&fakeService{err: err})
		for _, b := range []string{body, "[" + body + "," + body + "]"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, request.FeaturesPath, strings.NewReader(b)))
			if rec.Code != http.StatusTeapot || rec.Header().Get("X-Pot") != "tea" || rec.Body.String() != "{\"pot\":true}\n" {
				t.Errorf("%v, %.20s: %d %v %q; want the Responder's answer", err, b, rec.Code, rec.Header(), rec.Body)
			}
		}
	}
}

// TestAtRange: "at" in epoch milliseconds must be a time RFC 3339 can
// write (years 0000 to 9999), since the answer echoes it in RFC 3339 and
// ReadLog reads it back; beyond, the answer said "+292278994-08-17..."
// and its log line could not be read.
func TestAtRange(t *testing.T) {
	h := request.NewHandler(&fakeService{features: request.Features{Names: []string{"n"}, Values: []any{int64(1)}, Watermark: request.EndWatermark}})
	for _, tc := range []struct {
		at     string
		status int
		echo   string
	}{
		{"253402300799999", 200, "9999-12-31T23:59:59.999Z"},
		{"-62167219200000", 200, "0000-01-01T00:00:00Z"},
		{`"9999-12-31T23:59:59.999999999Z"`, 200, "9999-12-31T23:59:59.999999999Z"},
		{"253402300800000", 400, ""},
		{"-62167219200001", 400, ""},
		{"9223372036854775807", 400, ""},
		{"-9223372036854775808", 400, ""},
	} {
		for _, b := range []string{
			`{"key":{"user_id":1,"shop":"s"},"at":` + tc.at + `}`, // parseFast's shape
			`{"key":{"user_id":1,"shop":"s"},"AT":` + tc.at + `}`, // encoding/json's
		} {
			code, got := do(t, h, http.MethodPost, request.FeaturesPath, b)
			if code != tc.status {
				t.Errorf("%s: status %d: %s; want %d", b, code, got, tc.status)
				continue
			}
			if code != 200 {
				if !strings.Contains(got, "years 0000 to 9999") {
					t.Errorf("%s: %s; want the error to give the range", b, got)
				}
				continue
			}
			recs, err := request.ReadLog(strings.NewReader(got))
			if err != nil || len(recs) != 1 || !strings.Contains(got, `"at":"`+tc.echo+`"`) {
				t.Errorf("%s: answer %s read back as %v, %v; want at %s", b, got, recs, err, tc.echo)
			}
		}
	}
}
