package request

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/volga-go/volga/internal/jsonvalue"
)

// AppendJSON appends v, a feature value as described at Features.Values,
// as JSON: numbers, strings, booleans and null keep their JSON types;
// NaN and ±Inf become null; lists are arrays; structs are objects with
// their keys sorted; maps are objects in entry order whose keys are the
// values' text (RFC 3339 UTC for times); times are RFC 3339 UTC strings;
// durations are strings such as "1h30m0s"; bytes are base64 strings.
// Values of other types go through encoding/json, or become their fmt
// text when that fails, so the output is always valid JSON.
func AppendJSON(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case int:
		return strconv.AppendInt(dst, int64(x), 10)
	case int8:
		return strconv.AppendInt(dst, int64(x), 10)
	case int16:
		return strconv.AppendInt(dst, int64(x), 10)
	case int32:
		return strconv.AppendInt(dst, int64(x), 10)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10)
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10)
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10)
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10)
	case uint64:
		return strconv.AppendUint(dst, x, 10)
	case float32:
		return jsonvalue.AppendFloat(dst, float64(x), 32)
	case float64:
		return jsonvalue.AppendFloat(dst, x, 64)
	case json.Number:
		if json.Valid([]byte(x)) && x != "" {
			return append(dst, x...)
		}
		return appendString(dst, string(x))
	case string:
		return appendString(dst, x)
	case []byte:
		return appendString(dst, base64.StdEncoding.EncodeToString(x))
	case time.Time:
		return appendTime(dst, x)
	case time.Duration:
		return appendString(dst, x.String())
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSON(dst, e)
		}
		return append(dst, ']')
	case []MapEntry:
		dst = append(dst, '{')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, keyText(e.Key))
			dst = append(dst, ':')
			dst = AppendJSON(dst, e.Value)
		}
		return append(dst, '}')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			dst = AppendJSON(dst, x[k])
		}
		return append(dst, '}')
	}
	if b, err := json.Marshal(v); err == nil {
		return append(dst, b...)
	}
	return appendString(dst, fmt.Sprint(v))
}

// keyText is the object key for a map key: its JSON text without quotes.
func keyText(k any) string {
	switch x := k.(type) {
	case string:
		return x
	case time.Time:
		return formatTime(x)
	case nil:
		return "null"
	}
	b := AppendJSON(nil, k)
	if s, err := strconv.Unquote(string(b)); err == nil && len(b) > 0 && b[0] == '"' {
		return s
	}
	return string(b)
}

// formatTime renders t as RFC 3339 text in UTC (see jsonvalue.AppendTime).
func formatTime(t time.Time) string { return string(jsonvalue.AppendTime(nil, t)) }

// appendTime appends t as a JSON string: RFC 3339 in UTC, which needs no
// escaping.
func appendTime(dst []byte, t time.Time) []byte {
	dst = jsonvalue.AppendTime(append(dst, '"'), t)
	return append(dst, '"')
}

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte { return jsonvalue.AppendString(dst, s) }

// appendWatermark renders a watermark: null, "+inf" or an RFC 3339 time.
func appendWatermark(dst []byte, wm int64) []byte {
	switch wm {
	case NoWatermark:
		return append(dst, "null"...)
	case EndWatermark:
		return appendString(dst, "+inf")
	}
	return appendTime(dst, time.UnixMilli(wm))
}

// parseWatermark is the inverse of appendWatermark.
func parseWatermark(raw json.RawMessage) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return NoWatermark, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("watermark %s is not a string", raw)
	}
	if s == "+inf" {
		return EndWatermark, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("watermark %q is not RFC 3339", s)
	}
	return t.UnixMilli(), nil
}

// appendResult appends the JSON response for one lookup. keyCols are the
// key columns in order, key their values.
func appendResult(dst []byte, keyCols []string, key map[string]any, at time.Time, f Features) []byte {
	dst = append(dst, `{"key":{`...)
	for i, c := range keyCols {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, c)
		dst = append(dst, ':')
		dst = AppendJSON(dst, key[c])
	}
	dst = append(dst, `},"at":`...)
	dst = appendTime(dst, at)
	dst = append(dst, `,"watermark":`...)
	dst = appendWatermark(dst, f.Watermark)
	dst = append(dst, `,"features":{`...)
	for i, n := range f.Names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, n)
		dst = append(dst, ':')
		var v any
		if i < len(f.Values) {
			v = f.Values[i]
		}
		dst = AppendJSON(dst, v)
	}
	return append(dst, "}}"...)
}

// decodeOrdered decodes a JSON object keeping the order of its members.
// Values are decoded with numbers as json.Number.
func decodeOrdered(raw json.RawMessage) (names []string, values []any, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("want an object, got %s", raw)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		name, _ := tok.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		names = append(names, name)
		values = append(values, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	return names, values, nil
}
