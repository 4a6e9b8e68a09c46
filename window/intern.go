package window

import "strings"

// internMax and internMaxBytes bound the distinct values an interner
// keeps and their bytes; internTry is the number of rows over which a
// full interner must find most values known to stay on.
const (
	internMax      = 1 << 16
	internMaxBytes = 4 << 20
	internTry      = 1 << 14
)

// interner replaces the string arguments of pushed rows by one owned copy
// per distinct value, while they are still in cache. Pushed strings point
// into the Arrow buffers of their batches, so an aggregate hashing or
// comparing the value of a row it retracts days of event time later read
// far-apart, cold memory: for the value-keyed aggregates (topn_frequency,
// top1_ratio, the *_cate family) that was most of their hashing time. An
// interned value is one small hot copy, equal values share their bytes
// (and compare equal by pointer), and the rows no longer pin their
// batches' buffers.
//
// Categorical columns have few values; a column whose values rarely
// repeat (identifiers) would only fill the table, so once it holds
// internMax values (or internMaxBytes of them) an interner that finds
// fewer than half of the values of its next internTry rows known turns
// itself off for good. The values kept are never dropped: at most those
// bounds per string argument of an operator.
type interner struct {
	m     map[string]string
	bytes int // of the values in m
	off   bool
	seen  int // rows looked up since the table filled
	hits  int // of which found
}

// column interns the non-NULL values of str (null[i] marks NULLs); with
// clone, the values it does not intern are copied.
func (t *interner) column(str []string, null []bool, clone bool) {
	if t.off {
		if clone {
			for i, v := range str {
				if !null[i] {
					str[i] = strings.Clone(v)
				}
			}
		}
		return
	}
	if t.m == nil {
		t.m = make(map[string]string)
	}
	full := t.full()
	hits := 0
	for i, v := range str {
		if null[i] {
			continue
		}
		if c, ok := t.m[v]; ok {
			str[i] = c
			hits++
			continue
		}
		if !full {
			c := strings.Clone(v)
			t.m[c] = c
			str[i] = c
			t.bytes += len(c)
			full = t.full()
		} else if clone {
			str[i] = strings.Clone(v)
		}
	}
	if !full {
		return
	}
	t.seen += len(str)
	t.hits += hits
	if t.seen >= internTry {
		if 2*t.hits < t.seen {
			t.off, t.m = true, nil
			return
		}
		t.seen, t.hits = 0, 0
	}
}

func (t *interner) full() bool { return len(t.m) >= internMax || t.bytes >= internMaxBytes }
