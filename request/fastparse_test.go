package request

import (
	"encoding/json"
	"reflect"
	"testing"
)

// fastParseSeeds are requests the shortcut takes and ones it must leave
// to encoding/json.
var fastParseSeeds = []string{
	`{"key":{"user_id":48213},"at":1700000000123}`,
	` { "key" : { "user_id" : 1 , "shop" : "s1" } , "at" : "2024-01-03T11:00:00+01:00" } `,
	`{"at":"2024-01-03T10:00:00Z","key":{"SHOP":"ü","user_id":-0}}`,
	`{"key":{"user_id":1,"shop":"s"},"at":0,"row":{"amount":1.5e3,"cat":"a","ok":true,"no":false,"nil":null,"big":12345678901234567890}}`,
	`{"key":{"user_id":1,"shop":"s"},"at":1,"row":{}}`,
	`{"key":{"user_id":1.0,"shop":"s"},"at":1}`,
	`{"key":{"user_id":1e400,"shop":"s"},"at":1}`,
	`{"key":{"user_id":1,"shop":"s"},"at":1.5}`,
	`{"key":{"user_id":1,"shop":"s"},"at":"yesterday"}`,
	`{"key":{"user_id":1,"shop":"s"},"at":null}`,
	`{"key":{"user_id":1,"shop":"s"}}`,
	`{"at":1}`,
	`{}`,
	`{"key":{"user_id":1,"user_id":2,"shop":"s"},"at":1}`,
	`{"key":{"user_id":1,"USER_ID":2,"shop":"s"},"at":1}`,
	`{"key":{"user_id":1},"at":1}`,
	`{"key":{"user_id":1,"shop":"s","x":1},"at":1}`,
	`{"key":{"user_id":1,"shop":"s"},"at":1,"at":2}`,
	`{"Key":{"user_id":1,"shop":"s"},"at":1}`,
	`{"key":{"user_id":1,"shop":"s\"q"},"at":1}`,
	`{"key":{"user_id":1,"shop":"s\u0041"},"at":1}`,
	"{\"key\":{\"user_id\":1,\"shop\":\"\xff\"},\"at\":1}",
	"{\"key\":{\"user_id\":1,\"shop\":\"a\tb\"},\"at\":1}",
	`{"key":{"user_id":[1],"shop":"s"},"at":1}`,
	`{"key":{"user_id":{"a":1},"shop":"s"},"at":1}`,
	`{"key":{"user_id":01,"shop":"s"},"at":1}`,
	`{"key":{"user_id":-,"shop":"s"},"at":1}`,
	`{"key":{"user_id":1.,"shop":"s"},"at":1}`,
	`{"key":{"user_id":1e,"shop":"s"},"at":1}`,
	`{"key":{"user_id":1,"shop":"s",},"at":1}`,
	`{"key":{"user_id":1,"shop":"s"},"at":1,}`,
	`{"key":{"user_id":1,"shop":"s"},"at":1} {}`,
	`{"key":{"user_id":1,"shop":"s"},"at":1}` + "\u00a0",
	`{"key":{"user_id":tru,"shop":"s"},"at":1}`,
	`{"key":{"user_id":true,"shop":null},"at":1}`,
	`{"key":{"user_id":1,"shop":"s"},"at":1,"row":null}`,
	`{"key":{"user_id":1,"shop":"s"},"at":1,"row":{"a":1,"a":2}}`,
	`{"key":null,"at":1}`,
	`[{"key":{"user_id":1,"shop":"s"},"at":1}]`,
	`{"key":{"user_id":1,"shop":"s"},"at":9223372036854775807}`,
	`{"key":{"user_id":1,"shop":"s"},"at":9223372036854775808}`,
	`{"key":{"user_id":-9223372036854775809,"shop":"s"},"at":1}`,
	`{"key":{"user_id":1,"shop":"s"},"at":"2024-01-03T10:00:00.123456789-07:00"}`,
	`{"key":{"user_id":1,"shop":"s"},"at":-1e2}`,
}

// checkFast compares the shortcut with encoding/json on raw: whenever
// parseFast takes a request, encoding/json must accept it and give the
// same lookup.
func checkFast(t *testing.T, raw []byte) (taken bool) {
	keyCols := []string{"user_id", "shop"}
	fast, ok := parseFast(raw, keyCols)
	slow, err := parseLookupJSON(raw, keyCols)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("%q: parseFast took it, encoding/json refuses it: %v", raw, err)
	}
	if !reflect.DeepEqual(fast.key, slow.key) || !reflect.DeepEqual(fast.row, slow.row) || !fast.at.Equal(slow.at) || fast.at.String() != slow.at.String() {
		t.Fatalf("%q:\nparseFast    %#v %#v %s\nencoding/json %#v %#v %s", raw, fast.key, fast.row, fast.at, slow.key, slow.row, slow.at)
	}
	return true
}

func TestParseFastMatchesEncodingJSON(t *testing.T) {
	taken := 0
	for _, s := range fastParseSeeds {
		if checkFast(t, []byte(s)) {
			taken++
		}
	}
	// The common shapes must take the shortcut.
	for _, s := range fastParseSeeds[1:6] {
		if _, ok := parseFast([]byte(s), []string{"user_id", "shop"}); !ok {
			t.Errorf("%s: not taken by parseFast", s)
		}
	}
	if _, ok := parseFast([]byte(fastParseSeeds[0]), []string{"user_id"}); !ok {
		t.Errorf("%s: not taken by parseFast", fastParseSeeds[0])
	}
	if taken < 8 {
		t.Errorf("parseFast took %d of the seeds", taken)
	}
	// Errors keep their wording: parseLookup falls back to encoding/json.
	_, err := parseLookup([]byte(`{"key":{"user_id":1,"USER_ID":2,"shop":"s"},"at":1}`), []string{"user_id", "shop"})
	if err == nil || err.Error() != `key column "user_id" is given twice` {
		t.Errorf("duplicate key column: %v", err)
	}
	// encoding/json keeps the last of two equal names; the request is
	// refused instead, whatever path decodes it.
	for raw, want := range map[string]string{
		`{"key":{"user_id":1,"user_id":2,"shop":"s"},"at":1}`:            `member "user_id" is given twice in "key"`,
		`{"key":{"user_id":1,"shop":"s"},"at":1,"at":2}`:                 `member "at" is given twice in the request`,
		`{"key":{"user_id":1,"shop":"s"},"at":1,"AT":2}`:                 `member "AT" is given twice in the request`,
		`{"key":{"user_id":1,"shop":"s"},"at":1,"row":{"a":1,"a":2}}`:    `member "a" is given twice in "row"`,
		`{"key":{"user_id":1,"shop":"s"},"row":{"a":1},"at":1,"row":{}}`: `member "row" is given twice in the request`,
	} {
		if _, err := parseLookup([]byte(raw), []string{"user_id", "shop"}); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
	// Equal names in different objects are fine.
	if _, err := parseLookup([]byte(`{"key":{"user_id":1,"shop":"s"},"at":1,"row":{"user_id":2,"shop":"t"}}`), []string{"user_id", "shop"}); err != nil {
		t.Errorf("names repeated across objects: %v", err)
	}
}

func TestDuplicateMember(t *testing.T) {
	for raw, want := range map[string]string{
		`{"a":{"b":[{"c":1},{"c":2}],"d":{"c":1,"c":2}}}`: `"d" c`,
		`[{"x":1},{"y":2,"y":3}]`:                         `an array element y`,
		`{"a":[],"b":{},"c":[[{"a":1}]],"A":1}`:           `the request A`,
		`{"a":{"B":1,"b":2},"x":"a","y":"a"}`:             ``,
		`"a"`:                                             ``,
	} {
		got := ""
		if path, name, dup := duplicateMember([]byte(raw)); dup {
			got = path + " " + name
		}
		if got != want {
			t.Errorf("duplicateMember(%s) = %q, want %q", raw, got, want)
		}
	}
}

func FuzzParseFast(f *testing.F) {
	for _, s := range fastParseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkFast(t, raw)
		// json.Valid must agree that what was taken is one JSON object.
		if _, ok := parseFast(raw, []string{"user_id", "shop"}); ok && !json.Valid(raw) {
			t.Fatalf("%q: taken, but not valid JSON", raw)
		}
		// And so must it for what encoding/json's path accepts.
		if _, err := parseLookupJSON(raw, []string{"user_id", "shop"}); err == nil && !json.Valid(raw) {
			t.Fatalf("%q: accepted, but not valid JSON", raw)
		}
	})
}
