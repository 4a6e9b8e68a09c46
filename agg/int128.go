package agg

import (
	"math"
	"math/bits"
)

// int128 is an exact two's complement 128-bit accumulator for sums of
// int64 or uint64 values, which cannot overflow before 2^63 additions.
// Adding and subtracting are exact in any order, so a sum whose
// intermediate values leave the int64 range still ends exact (sum, avg,
// variance).
type int128 struct {
	hi int64
	lo uint64
}

func (x *int128) add(v int64) {
	var c uint64
	x.lo, c = bits.Add64(x.lo, uint64(v), 0)
	x.hi += int64(c) + v>>63
}

func (x *int128) sub(v int64) {
	var b uint64
	x.lo, b = bits.Sub64(x.lo, uint64(v), 0)
	x.hi -= int64(b) + v>>63
}

// addU adds v read as unsigned (a UBIGINT value).
func (x *int128) addU(v uint64) {
	var c uint64
	x.lo, c = bits.Add64(x.lo, v, 0)
	x.hi += int64(c)
}

// subU subtracts v read as unsigned.
func (x *int128) subU(v uint64) {
	var b uint64
	x.lo, b = bits.Sub64(x.lo, v, 0)
	x.hi -= int64(b)
}

func (x *int128) addWide(o int128) {
	var c uint64
	x.lo, c = bits.Add64(x.lo, o.lo, 0)
	x.hi += o.hi + int64(c)
}

// int64 returns x's low 64 bits as an int64 and whether that is x, that
// is whether x fits in an int64 (hi is the sign extension of lo).
func (x int128) int64() (int64, bool) {
	v := int64(x.lo)
	return v, x.hi == v>>63
}

// float converts to the nearest float64 (exactly rounded when the value
// fits in an int64).
func (x int128) float() float64 {
	if v, ok := x.int64(); ok {
		return float64(v)
	}
	return float64(x.hi)*(1<<64) + float64(x.lo)
}

// sumInts returns the number of the values vals[k] whose nulls[k] is
// false and their exact sum. It has no branch per value (NULL rows are
// masked, not skipped) and no carry chain: it adds the values' signed
// high and unsigned low 32-bit halves in two int64 sums, which cannot
// overflow within 2^32 values, and combines them in 128 bits per chunk
// of fewer values.
func sumInts(vals []int64, nulls []bool) (int64, int128) {
	return sumIntsChunked(vals, nulls, math.MaxInt32, false)
}

// sumUints is sumInts of vals read as unsigned (UBIGINT values held bit
// for bit in an int64): both halves are unsigned.
func sumUints(vals []int64, nulls []bool) (int64, int128) {
	return sumIntsChunked(vals, nulls, math.MaxInt32, true)
}

// sumIntsChunked is sumInts (sumUints when unsigned) with chunks of at
// most chunk (< 2^32) values.
func sumIntsChunked(vals []int64, nulls []bool, chunk int, unsigned bool) (int64, int128) {
	var n int64
	var sum int128
	for len(nulls) > 0 {
		m := min(len(nulls), chunk)
		var k int64
		var high int128 // the high halves' sum, shifted up 32 bits
		var ls uint64
		if unsigned {
			var hs uint64
			k, hs, ls = sumUhalves(vals[:m], nulls[:m])
			high = int128{hi: int64(hs >> 32), lo: hs << 32}
		} else {
			var hs int64
			k, hs, ls = sumHalves(vals[:m], nulls[:m])
			high = int128{hi: hs >> 32, lo: uint64(hs) << 32}
		}
		n += k
		sum.addWide(high)
		sum.addWide(int128{lo: ls})
		vals, nulls = vals[m:], nulls[m:]
	}
	return n, sum
}

// sumHalves returns the number of the values vals[k] whose nulls[k] is
// false (fewer than 2^32 of them), the sum of their high halves v>>32 and
// that of their low halves uint32(v). Not inlined: within the chunk
// loop the compiler spilled the loop's values to the stack.
//
//go:noinline
func sumHalves(vals []int64, nulls []bool) (n, hs int64, ls uint64) {
	vals = vals[:len(nulls)]
	for k, null := range nulls {
		v, one := vals[k], int64(1)
		if null {
			v, one = 0, 0
		}
		n += one
		hs += v >> 32
		ls += uint64(uint32(v))
	}
	return n, hs, ls
}

// sumUhalves is sumHalves of the values read as unsigned: the high
// halves are uint64(v)>>32, so their sum is unsigned as well.
//
//go:noinline
func sumUhalves(vals []int64, nulls []bool) (n int64, hs, ls uint64) {
	vals = vals[:len(nulls)]
	for k, null := range nulls {
		v, one := uint64(vals[k]), int64(1)
		if null {
			v, one = 0, 0
		}
		n += one
		hs += v >> 32
		ls += uint64(uint32(v))
	}
	return n, hs, ls
}
