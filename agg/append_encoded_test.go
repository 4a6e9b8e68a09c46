package agg

import (
	"bytes"
	"fmt"
	"testing"
)

// fixedAppender encodes as n bytes counting up from 1.
type fixedAppender int

func (n fixedAppender) AppendBinary(out []byte) ([]byte, error) {
	for i := range int(n) {
		out = append(out, byte(i+1))
	}
	return out, nil
}

func (n fixedAppender) MarshalBinary() ([]byte, error) { return n.AppendBinary(nil) }

// TestAppendEncodedLengths: AppendEncoded writes the length of an
// encoding appended in place with as many uvarint bytes as it needs,
// moving the encoding up past the first byte it reserved.
func TestAppendEncodedLengths(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 129, 300, 16383, 16384, 100_000} {
		data, _ := fixedAppender(n).MarshalBinary()
		checkAppendEncoded(t, fixedAppender(n), data, fmt.Sprintf("%d bytes", n))
		// Behind a prefix whose buffer has room to spare: the bytes
		// past the result must not matter.
		buf := append(make([]byte, 0, n+64), "xy"...)
		got, err := AppendEncoded(buf, fixedAppender(n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(got, []byte("xy")) || !bytes.HasSuffix(got, data) {
			t.Fatalf("%d bytes behind a prefix: %x", n, got[:min(len(got), 16)])
		}
	}
}
