package agg

import (
	"math/rand/v2"
	"testing"
)

// fuzzFuncs binds one function of every state type under test.
func fuzzFuncs(t testing.TB) []Func {
	var out []Func
	seen := map[string]bool{}
	for _, c := range allCases() {
		if k := c.String(); !seen[k] {
			seen[k] = true
			out = append(out, c.bind(t))
		}
	}
	return out
}

// FuzzUnmarshal feeds arbitrary bytes to every state's UnmarshalBinary: it
// must return an error or a state that can be used (results, encoding,
// merging, adding rows) without panicking.
func FuzzUnmarshal(f *testing.F) {
	funcs := fuzzFuncs(f)
	rng := rand.New(rand.NewPCG(5, 5))
	r := randRows(rng, 40)
	for _, fn := range funcs {
		s := fn.NewState()
		for a := r.Base; a < r.End(); a++ {
			s.Add(r, a)
		}
		data, _ := s.MarshalBinary()
		f.Add(data)
		empty, _ := fn.NewState().MarshalBinary()
		f.Add(empty)
	}
	// Integer sums beyond int64 (the wide form of sum states).
	for _, x := range []int128{{hi: 0, lo: 1 << 63}, {hi: -2, lo: 5}} {
		data, _ := (&sumIntState{n: 3, sum: x}).MarshalBinary()
		f.Add(data)
	}
	// Float sums holding huge values (fsum's scaled part), variances
	// with several magnitude classes, and merged (mixed) ones.
	hr := withHugeFloats(rng, 40)
	for _, name := range []string{"sum", "avg", "var_pop"} {
		fn, err := Bind(name, []Arg{colArg(colFloat)})
		if err != nil {
			f.Fatal(err)
		}
		s, m := fn.NewState(), fn.NewState()
		for a := hr.Base; a < hr.End(); a++ {
			s.Add(hr, a)
			if a%2 == 0 {
				m.Add(hr, a)
			}
		}
		data, _ := s.MarshalBinary()
		f.Add(data)
		m.Merge(s)
		data, _ = m.MarshalBinary()
		f.Add(data)
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fn := range funcs {
			s := fn.NewState()
			if err := s.UnmarshalBinary(data); err != nil {
				continue
			}
			result(fn, s)
			if _, err := s.MarshalBinary(); err != nil {
				t.Fatalf("%s: decoded state does not encode: %v", fn.Name(), err)
			}
			o := fn.NewState()
			o.Add(r, r.Base)
			o.Merge(s)
			result(fn, o)
			s.Merge(o)
			s.Add(r, r.Base+1)
			result(fn, s)
		}
	})
}

func allCases() []aggCase { return append(standardCases(), mlCases()...) }

// FuzzWindowUnmarshal feeds arbitrary bytes to every Window's
// UnmarshalBinary (WindowCodec): it must return an error or a window that
// encodes again, never panic. The seeds are encodings of windows that
// evaluated random frames.
func FuzzWindowUnmarshal(f *testing.F) {
	funcs := fuzzFuncs(f)
	rng := rand.New(rand.NewPCG(7, 7))
	r := randRows(rng, 60)
	fr := randFrames(rng, r)
	for _, fn := range funcs {
		_, w := evalWindow(fn, r, fr, rng)
		data, err := w.(WindowCodec).MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fn := range funcs {
			w := fn.NewWindow().(WindowCodec)
			if err := w.UnmarshalBinary(data); err != nil {
				continue
			}
			if _, err := w.MarshalBinary(); err != nil {
				t.Fatalf("%s: decoded window does not encode: %v", fn.Name(), err)
			}
		}
	})
}
