package textrow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"unicode/utf8"
)

type member struct {
	Key  string
	Kind Kind
	Val  string
}

func scanAll(s string) ([]member, error) {
	var out []member
	err := ScanObject(s, func(key string, k Kind, v string) error {
		out = append(out, member{key, k, v})
		return nil
	})
	return out, err
}

func TestScanObject(t *testing.T) {
	got, err := scanAll(` {"b":1, "a":{"x":[1,"}"]}, "c":"q\"uote", "d" : null,"e":[ ],"f":false,"g":true,"h":-1.5e3,"\u0069":""} `)
	if err != nil {
		t.Fatal(err)
	}
	want := []member{
		{"b", Number, "1"},
		{"a", Nested, `{"x":[1,"}"]}`},
		{"c", String, `q"uote`},
		{"d", Null, ""},
		{"e", Nested, "[ ]"},
		{"f", Bool, "false"},
		{"g", Bool, "true"},
		{"h", Number, "-1.5e3"},
		{"i", String, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	for _, in := range []string{`{}`, ` { } `} {
		if got, err := scanAll(in); err != nil || len(got) != 0 {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	for _, in := range []string{`[1]`, `"s"`, `1`, `null`, ``} {
		if _, err := scanAll(in); !errors.Is(err, ErrNotObject) {
			t.Errorf("ScanObject(%q) = %v, want %v", in, err, ErrNotObject)
		}
	}
}

func TestScanObjectStopsAtError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := ScanObject(`{"a":1,"b":2,"c":3}`, func(key string, k Kind, v string) error {
		n++
		if key == "b" {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Fatalf("err %v after %d members", err, n)
	}
}

// decodeMembers is the reference: the members of data as encoding/json
// reads them, in the form ScanObject hands them over.
func decodeMembers(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, ErrNotObject
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		m := member{Key: tok.(string)}
		switch raw[0] {
		case 'n':
			m.Kind = Null
		case 't', 'f':
			m.Kind, m.Val = Bool, string(raw)
		case '"':
			m.Kind = String
			if err := json.Unmarshal(raw, &m.Val); err != nil {
				return nil, err
			}
		case '{', '[':
			m.Kind, m.Val = Nested, string(raw)
		default:
			m.Kind, m.Val = Number, string(raw)
		}
		out = append(out, m)
	}
	return out, nil
}

// FuzzScanObject checks ScanObject against encoding/json on valid UTF-8
// JSON (on invalid UTF-8 the two differ by design: encoding/json replaces
// it, ScanObject passes unescaped bytes through).
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{
		`{"a": 1, "b": "x"}`,
		`{"a": 2.5, "c": [1, {"d": "}"}]}`,
		`{"a\u0041": "\ud83d\ude00", "a": true, "n": null}`,
		`{"s": "q\"uote\\", "e": -0.5E+2, "o": {"x": "]"}}`,
		`[1]`,
		` { } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || !utf8.Valid(data) {
			return
		}
		want, wantErr := decodeMembers(data)
		got, err := scanAll(string(data))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%s: error %v, encoding/json %v", data, err, wantErr)
		}
		if err == nil && fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s:\n got  %+v\nwant %+v", data, got, want)
		}
	})
}
