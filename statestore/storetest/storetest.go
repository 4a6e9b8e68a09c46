// Package storetest is the conformance suite of statestore.Store: every
// implementation runs Run against fresh stores, so they all behave alike.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/volga-go/volga/statestore"
)

// Run checks the Store contract on stores returned by open, which must
// return a new, empty store each time.
func Run(t *testing.T, open func(t *testing.T) statestore.Store) {
	t.Run("GetSetDelete", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		if _, err := s.Get([]byte("a")); !errors.Is(err, statestore.ErrNotFound) {
			t.Fatalf("Get(missing) = %v, want ErrNotFound", err)
		}
		must(t, s.Set([]byte("a"), []byte("1")))
		must(t, s.Set([]byte("a"), []byte("2")))
		if v, err := s.Get([]byte("a")); err != nil || string(v) != "2" {
			t.Fatalf("Get(a) = %q, %v; want 2", v, err)
		}
		must(t, s.Set([]byte("empty"), nil))
		if v, err := s.Get([]byte("empty")); err != nil || len(v) != 0 {
			t.Fatalf("Get(empty) = %q, %v; want an empty value", v, err)
		}
		must(t, s.Delete([]byte("a")))
		must(t, s.Delete([]byte("a")))
		if _, err := s.Get([]byte("a")); !errors.Is(err, statestore.ErrNotFound) {
			t.Fatalf("Get after Delete = %v, want ErrNotFound", err)
		}
	})
	t.Run("Copies", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		k, v := []byte("k"), []byte("value")
		must(t, s.Set(k, v))
		k[0], v[0] = 'x', 'x'
		got, err := s.Get([]byte("k"))
		if err != nil || string(got) != "value" {
			t.Fatalf("the store kept the caller's slices: Get = %q, %v", got, err)
		}
		got[0] = 'y'
		if again, _ := s.Get([]byte("k")); string(again) != "value" {
			t.Fatalf("Get returned the store's own memory: now %q", again)
		}
	})
	t.Run("ScanOrderAndPrefix", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		r := rand.New(rand.NewPCG(7, 7))
		want := map[string]string{}
		for i := 0; i < 500; i++ {
			k := fmt.Sprintf("%c/%04d", 'a'+r.IntN(3), r.IntN(1000))
			v := fmt.Sprint(r.Int())
			want[k] = v
			must(t, s.Set([]byte(k), []byte(v)))
		}
		for _, prefix := range []string{"", "a/", "b/00", "zz"} {
			var keys []string
			err := s.Scan([]byte(prefix), func(k, v []byte) error {
				if want[string(k)] != string(v) {
					return fmt.Errorf("Scan gave %q=%q, want %q", k, v, want[string(k)])
				}
				keys = append(keys, string(k))
				return nil
			})
			must(t, err)
			var exp []string
			for k := range want {
				if strings.HasPrefix(k, prefix) {
					exp = append(exp, k)
				}
			}
			slices.Sort(exp)
			if !slices.Equal(keys, exp) {
				t.Fatalf("Scan(%q) visited %d keys, want %d in order", prefix, len(keys), len(exp))
			}
		}
	})
	t.Run("ScanStops", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		for i := 0; i < 10; i++ {
			must(t, s.Set([]byte{byte(i)}, []byte{1}))
		}
		stop := errors.New("stop")
		n := 0
		err := s.Scan(nil, func(k, v []byte) error {
			n++
			if n == 3 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || n != 3 {
			t.Fatalf("Scan returned %v after %d keys; want stop after 3", err, n)
		}
	})
	t.Run("BinaryKeys", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		keys := [][]byte{{0}, {0, 0}, {0, 255}, {255}, {1, 0, 1}}
		for _, k := range keys {
			must(t, s.Set(k, k))
		}
		var got [][]byte
		must(t, s.Scan(nil, func(k, v []byte) error {
			if !bytes.Equal(k, v) {
				return fmt.Errorf("value of %v is %v", k, v)
			}
			got = append(got, bytes.Clone(k))
			return nil
		}))
		slices.SortFunc(keys, bytes.Compare)
		if !slices.EqualFunc(got, keys, bytes.Equal) {
			t.Fatalf("Scan order %v, want %v", got, keys)
		}
	})
	t.Run("Closed", func(t *testing.T) {
		s := open(t)
		must(t, s.Close())
		if err := s.Set([]byte("a"), nil); !errors.Is(err, statestore.ErrClosed) {
			t.Fatalf("Set on a closed store = %v, want ErrClosed", err)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
