package reuse_test

import (
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/parleyhq/parley/internal/reuse"
)

func TestSetWritesADifferentValue(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
	}{
		{name: "different", old: "a", new: "b"},
		{name: "equal", old: "a", new: "a"},
		{name: "to empty", old: "a", new: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := tt.old
			reuse.Set(&dst, tt.new)
			assert.Equal(t, tt.new, dst)
		})
	}
}

func TestStringWritesAnotherString(t *testing.T) {
	a := strings.Repeat("a", 3)
	tests := []struct {
		name     string
		old, new string
	}{
		{name: "different", old: a, new: "bbb"},
		{name: "a copy", old: a, new: strings.Clone(a)},
		{name: "the same string", old: a, new: a},
		{name: "a prefix of it", old: a, new: a[:2]},
		{name: "to empty", old: a, new: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := tt.old
			reuse.String(&dst, tt.new)
			assert.Equal(t, tt.new, dst)
			assert.Equal(t, unsafe.StringData(tt.new), unsafe.StringData(dst), "dst does not hold the string written")
		})
	}
}

func TestMapWritesAnotherMap(t *testing.T) {
	a, b := map[string]any{"n": 1}, map[string]any{"n": 1}
	tests := []struct {
		name     string
		old, new map[string]any
	}{
		{name: "another map with the same entries", old: a, new: b},
		{name: "the same map", old: a, new: a},
		{name: "nil", old: a, new: nil},
		{name: "over nil", old: nil, new: a},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := tt.old
			reuse.Map(&dst, tt.new)
			assert.Equal(t, reflect.ValueOf(tt.new).UnsafePointer(), reflect.ValueOf(dst).UnsafePointer(), "dst is not the map written")
		})
	}
}

func TestSliceWritesAnotherSlice(t *testing.T) {
	arr := []string{"a", "b", "c"}
	tests := []struct {
		name     string
		old, new []string
	}{
		{name: "a copy", old: arr, new: append([]string(nil), arr...)},
		{name: "shorter", old: arr, new: arr[:2]},
		{name: "less capacity", old: arr[:2], new: arr[:2:2]},
		{name: "the same slice", old: arr, new: arr},
		{name: "nil", old: arr, new: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := tt.old
			reuse.Slice(&dst, tt.new)
			assert.Equal(t, len(tt.new), len(dst))
			assert.Equal(t, cap(tt.new), cap(dst))
			if len(tt.new) > 0 {
				assert.Same(t, &tt.new[0], &dst[0])
			} else {
				assert.Nil(t, dst)
			}
		})
	}
}
