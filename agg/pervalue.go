package agg

// PerValue reports whether the windows of f keep an entry per distinct
// value or category of their rows (a hash table with its slots and an
// order over them, a map of categories with a state each):
// count_distinct, top, topn_frequency, top1_ratio and the *_cate and
// *_cate_where families. Such a window is several objects
// of its own, so visiting it for a key costs several cache misses
// whatever the number of rows the visit brings; a batch run lets more of
// a key's rows wait between visits when its windows are such (see the
// pipeline package's release policy).
func PerValue(f Func) bool {
	for {
		switch x := f.(type) {
		case *whereFunc:
			f = x.inner
		case perValuer:
			return true
		default:
			return false
		}
	}
}

// perValuer marks the Funcs whose windows keep an entry per distinct
// value (see PerValue).
type perValuer interface{ perValue() }

func (*countDistinctFunc) perValue() {}
func (*topFunc[K]) perValue()        {}
func (*topnFunc[K]) perValue()       {}
func (*top1Func[K]) perValue()       {}
func (*cateFunc[G]) perValue()       {}
