// Package prefetch asks the CPU to bring memory into its caches ahead of
// use, without waiting for it: a prefetch instruction on amd64 and arm64,
// nothing elsewhere. An operator about to visit many objects once each (a
// window task's key states) names the objects of the next visits while
// it works on the current one, so that their cache misses overlap its
// work instead of stalling it. A plain load would do the same only until
// the CPU's reorder window fills; a prefetch never holds instructions up.
//
// A prefetch of any address is harmless: it never faults and changes no
// memory. It is a hint the CPU may ignore.
package prefetch
