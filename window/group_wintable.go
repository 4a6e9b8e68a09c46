package window

import "github.com/volga-go/volga/internal/inttable"

// winTable maps key ids to a start's open windows (startWins.byKey):
// open addressing with linear probing over one array of (key, window)
// slots, at most half full, deletion by backward shift. A window is
// opened for nearly every row of an hourly GROUP BY of users, and each
// opening looked the key up and inserted it in a Go map; here a lookup
// of a key not in cache reads one slot where the map read its control
// word and then the slot (group-1-by-user: the map's lookups, inserts
// and deletes were 0.9 of 5.0 CPU s).
type winTable struct {
	slots []winSlot
	n     int
	shift uint // 64 - log2(len(slots))
}

// winSlot holds a key id and its window; a nil window marks an empty
// slot.
type winSlot struct {
	w   *groupWin
	key int32
}

// newWinTable returns a table with room for n keys.
func newWinTable(n int) winTable {
	var t winTable
	t.reserve(n)
	return t
}

func (t *winTable) home(key int32) int { return inttable.Home(uint64(uint32(key)), t.shift) }

// get returns the window of key, nil if none.
func (t *winTable) get(key int32) *groupWin {
	if t.n == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.w == nil || s.key == key {
			return s.w
		}
	}
}

// put sets the window of key (w not nil).
func (t *winTable) put(key int32, w *groupWin) {
	if 2*(t.n+1) > len(t.slots) {
		t.resize(max(2*len(t.slots), 16))
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.w == nil {
			*s = winSlot{w: w, key: key}
			t.n++
			return
		}
		if s.key == key {
			s.w = w
			return
		}
	}
}

// del removes key, moving later slots of its probe run back so that
// every key stays reachable from its home slot.
func (t *winTable) del(key int32) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(key)
	for ; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.w == nil {
			return
		}
		if s.key == key {
			break
		}
	}
	for j := (i + 1) & mask; t.slots[j].w != nil; j = (j + 1) & mask {
		home := t.home(t.slots[j].key)
		// The key at j may move to i if i is not before its home along
		// the run: j is at least as far from its home as from i.
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = winSlot{}
	t.n--
}

// len is the number of keys.
func (t *winTable) len() int { return t.n }

// reset empties the table, keeping its room.
func (t *winTable) reset() {
	clear(t.slots)
	t.n = 0
}

// each calls fn for every key and its window, in no particular order.
func (t *winTable) each(fn func(key int32, w *groupWin)) {
	for _, s := range t.slots {
		if s.w != nil {
			fn(s.key, s.w)
		}
	}
}

// reserve makes room for n keys without growing.
func (t *winTable) reserve(n int) {
	if size := inttable.HalfFullSize(n, 16); size > len(t.slots) {
		t.resize(size)
	}
}

// resize moves the keys into a table of size slots (a power of two).
func (t *winTable) resize(size int) {
	old := t.slots
	t.slots = make([]winSlot, size)
	t.shift = inttable.Shift(size)
	t.n = 0
	for _, s := range old {
		if s.w != nil {
			t.put(s.key, s.w)
		}
	}
}
