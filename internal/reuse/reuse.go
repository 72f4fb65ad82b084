// Package reuse writes values into memory that is reused from one use to
// the next, such as the output events of an engine.Queue: a field is
// written only when it does not hold the value already. Each pointer
// written into the heap while the collector marks costs a write barrier;
// memory that sees the same values again (a worker's queue running
// conversations of one policy hands out the same policy names, agents
// and messages in the same places) then writes none.
package reuse

import "unsafe"

// Set writes v to *dst unless *dst already equals v. For a string, which
// == compares byte by byte, use String.
func Set[T comparable](dst *T, v T) {
	if *dst != v {
		*dst = v
	}
}

// String writes s to *dst unless *dst is the same string: the same bytes
// in memory, not a copy of them. It does not read the bytes: the string
// *dst held may be cold in the cache.
func String[S ~string](dst *S, s S) {
	if d := *dst; unsafe.StringData(string(d)) != unsafe.StringData(string(s)) || len(d) != len(s) {
		*dst = s
	}
}

// Map writes m to *dst unless *dst is the same map.
func Map[K comparable, V any](dst *map[K]V, m map[K]V) {
	if *(*unsafe.Pointer)(unsafe.Pointer(dst)) != *(*unsafe.Pointer)(unsafe.Pointer(&m)) {
		*dst = m
	}
}

// Slice writes s to *dst unless *dst is the same slice: the same array,
// length and capacity.
func Slice[T any](dst *[]T, s []T) {
	if d := *dst; unsafe.SliceData(d) != unsafe.SliceData(s) || len(d) != len(s) || cap(d) != cap(s) {
		*dst = s
	}
}
