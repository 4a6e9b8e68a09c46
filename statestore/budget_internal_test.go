package statestore

import "testing"

// TestBadgerOptionsWithinBudget: the memtables Badger may hold (the
// mutable one and the immutable ones waiting for a flush), the block cache
// and the index cache derived from a memory budget never add up to more
// than the budget, budgets under the minimum are raised to it, and every
// part is positive (Badger refuses a zero memtable).
func TestBadgerOptionsWithinBudget(t *testing.T) {
	for _, budget := range []int64{0, 1, 1 << 20, minMemoryBudget, 5 << 20, DefaultMemoryBudget, 100 << 20, 1 << 30, 3<<30 + 7} {
		bo := badgerOptions(t.TempDir(), badgerConfig{budget: budget})
		want := max(budget, minMemoryBudget)
		used := bo.MemTableSize*int64(bo.NumMemtables) + bo.BlockCacheSize + bo.IndexCacheSize
		if used > want {
			t.Errorf("budget %d: memtables %d x %d + block cache %d + index cache %d = %d, over %d",
				budget, bo.NumMemtables, bo.MemTableSize, bo.BlockCacheSize, bo.IndexCacheSize, used, want)
		}
		if used < want*3/4 {
			t.Errorf("budget %d: only %d of %d used", budget, used, want)
		}
		if bo.MemTableSize <= 0 || bo.BlockCacheSize <= 0 || bo.IndexCacheSize <= 0 || bo.BaseTableSize <= 0 || bo.BaseTableSize > bo.MemTableSize {
			t.Errorf("budget %d: memtable %d, block cache %d, index cache %d, base table %d", budget, bo.MemTableSize, bo.BlockCacheSize, bo.IndexCacheSize, bo.BaseTableSize)
		}
		// Level 0 compacts into a base level that can hold it whole, and
		// never into one smaller than Badger's default.
		if bo.BaseLevelSize < int64(bo.NumLevelZeroTables)*bo.MemTableSize || bo.BaseLevelSize < 10<<20 {
			t.Errorf("budget %d: base level %d for %d level-0 tables of %d", budget, bo.BaseLevelSize, bo.NumLevelZeroTables, bo.MemTableSize)
		}
		// A write batch is 15 % of a memtable: the largest value kept in
		// the LSM tree must fit in one.
		if 2*bo.ValueThreshold > bo.MemTableSize*15/100 {
			t.Errorf("budget %d: value threshold %d too large for memtables of %d", budget, bo.ValueThreshold, bo.MemTableSize)
		}
	}
}
