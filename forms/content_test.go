package forms_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// nested returns leaf inside n lists.
func nested(n int, leaf any) any {
	v := leaf
	for range n {
		v = []any{v}
	}
	return v
}

// list returns a list of n zeros.
func list(n int) []any { return make([]any, n) }

// contentCase is content and what CheckContent says of it under limits.
type contentCase struct {
	name    string
	content map[string]any
	limits  forms.Limits
	want    string // the error, "" for none
}

func contentCases() []contentCase {
	cyclicList := []any{nil}
	cyclicList[0] = cyclicList
	cyclicMap := map[string]any{}
	cyclicMap["self"] = cyclicMap
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	return []contentCase{
		{name: "nil", content: nil},
		{name: "empty", content: map[string]any{}},
		{name: "every JSON type", content: map[string]any{
			"s": "x", "b": true, "n": nil, "f": 1.5, "i": 3, "u": uint8(3), "j": json.Number("12.5"),
			"l": []any{1, "x", map[string]any{"a": []any{}}}, "m": map[string]any{"k": false},
			"t": at, "d": time.Second, "f32": float32(2),
		}},
		{name: "NaN", content: map[string]any{"price": math.NaN()}, want: "content holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry"},
		{name: "an infinity deep inside", content: map[string]any{"l": []any{map[string]any{"x": math.Inf(-1)}}}, want: "content holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry"},
		{name: "float32 infinity", content: map[string]any{"x": float32(math.Inf(1))}, want: "content holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry"},
		{name: "json.Number out of range", content: map[string]any{"x": json.Number("1e400")}, want: "content holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry"},
		{name: "json.Number that is no number", content: map[string]any{"x": json.Number("NaN")}, want: "content holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry"},
		{name: "32 deep", content: map[string]any{"x": nested(31, 1)}},
		{name: "33 deep", content: map[string]any{"x": nested(32, 1)}, want: "content nests maps and lists more than 32 deep"},
		{name: "a million deep", content: map[string]any{"x": nested(1_000_000, 1)}, want: "content nests maps and lists more than 32 deep"},
		{name: "a list that holds itself", content: map[string]any{"x": cyclicList}, want: "content nests maps and lists more than 32 deep"},
		{name: "a map that holds itself", content: cyclicMap, want: "content nests maps and lists more than 32 deep"},
		{name: "10,000 values", content: map[string]any{"x": list(9_999)}},
		{name: "10,001 values", content: map[string]any{"x": list(10_000)}, want: "content holds more than 10000 values"},
		{name: "values count at every depth", content: map[string]any{"x": []any{list(5_000), list(5_000)}}, want: "content holds more than 10000 values"},
		{name: "1 MiB of keys and strings", content: map[string]any{"k": strings.Repeat("x", 1<<20-1)}},
		{name: "a byte more", content: map[string]any{"kk": strings.Repeat("x", 1<<20-1)}, want: "content holds more than 1048576 bytes of keys and strings"},
		{name: "bytes add up", content: map[string]any{"a": strings.Repeat("x", 1<<19), "b": []any{strings.Repeat("x", 1<<19)}}, want: "content holds more than 1048576 bytes of keys and strings"},
		{name: "a time JSON cannot write", content: map[string]any{"t": time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, want: "content holds a time outside the years 0 to 9999, which JSON cannot carry"},
		{name: "a channel", content: map[string]any{"c": make(chan int)}, want: "content holds a chan int, which is not a JSON value"},
		{name: "a Go slice that is not a JSON list", content: map[string]any{"l": []string{"x"}}, want: "content holds a []string, which is not a JSON value"},
		{name: "the first type by name", content: map[string]any{"c": make(chan int), "l": []string{"x"}, "p": &at}, want: "content holds a *time.Time, which is not a JSON value"},
		{name: "too deep before not finite", content: map[string]any{"x": nested(40, 1), "y": math.NaN()}, want: "content nests maps and lists more than 32 deep"},
		{name: "too many values before too deep", content: map[string]any{"x": nested(40, 1), "y": list(10_000)}, want: "content holds more than 10000 values"},
		{name: "other limits", content: map[string]any{"a": map[string]any{"b": 1}}, limits: forms.Limits{MaxDepth: 2, MaxNodes: 2, MaxBytes: 2}},
		{name: "other depth", content: map[string]any{"a": map[string]any{"b": []any{}}}, limits: forms.Limits{MaxDepth: 2}, want: "content nests maps and lists more than 2 deep"},
		{name: "other values", content: map[string]any{"a": 1, "b": 2, "c": 3}, limits: forms.Limits{MaxNodes: 2}, want: "content holds more than 2 values"},
		{name: "other bytes", content: map[string]any{"a": "bc"}, limits: forms.Limits{MaxBytes: 2}, want: "content holds more than 2 bytes of keys and strings"},
		{name: "scalars count with what follows them", content: map[string]any{"a": 1, "b": "x", "l": []any{}}, limits: forms.Limits{MaxNodes: 2}, want: "content holds more than 2 values"},
		{name: "scalars' bytes count with what follows them", content: map[string]any{"a": "xx", "l": []any{"y"}}, limits: forms.Limits{MaxBytes: 4}, want: "content holds more than 4 bytes of keys and strings"},
		{name: "a field that is not finite among many", content: map[string]any{"a": 1, "b": "x", "c": math.Inf(1), "d": true, "e": nil}, want: "content holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry"},
	}
}

func TestCheckContent(t *testing.T) {
	for _, tt := range contentCases() {
		t.Run(tt.name, func(t *testing.T) {
			// Map order varies from run to run; the answer must not.
			for range 10 {
				err := forms.CheckContent(tt.content, tt.limits)
				if tt.want == "" {
					require.NoError(t, err)
					continue
				}
				require.Error(t, err)
				assert.Equal(t, tt.want, err.Error())
			}
		})
	}
}

// Fields.CheckContent gives CheckContent's answer whichever names it
// holds: the content's own (looked up), more, fewer (it checks as
// CheckContent does) or others.
func TestFieldsCheckContent(t *testing.T) {
	for _, tt := range contentCases() {
		keys := slices.Sorted(maps.Keys(tt.content))
		sets := []struct {
			name  string
			names []string
		}{
			{"the content's", keys},
			{"the content's twice", append(slices.Clone(keys), keys...)},
			{"more", append(slices.Clone(keys), "other", "another")},
			{"fewer", keys[:len(keys)/2]},
			{"all but the first, and others", append(slices.Clone(keys[min(1, len(keys)):]), "other", "another")},
			{"none", nil},
		}
		for _, set := range sets {
			t.Run(tt.name+"/"+set.name, func(t *testing.T) {
				fields := fieldsNamed(t, set.names...)
				for range 10 {
					err := fields.CheckContent(tt.content, tt.limits)
					if tt.want == "" {
						require.NoError(t, err)
						continue
					}
					require.Error(t, err)
					assert.Equal(t, tt.want, err.Error())
				}
			})
		}
	}
}

// A Fields that has learned a name besides its own (the first content
// held alone besides them) gives CheckContent's answer whatever that
// field or the others hold, whichever name it learned.
func TestFieldsCheckContentWithALearnedName(t *testing.T) {
	for _, tt := range contentCases() {
		keys := slices.Sorted(maps.Keys(tt.content))
		for j, learned := range append(slices.Clone(keys), "other") {
			t.Run(fmt.Sprintf("%s/learned %s", tt.name, policy.Quote(learned)), func(t *testing.T) {
				own := slices.Delete(slices.Clone(keys), min(j, len(keys)), min(j+1, len(keys)))
				fields := fieldsNamed(t, own...)
				require.NoError(t, fields.CheckContent(map[string]any{learned: nil}, forms.DefaultLimits))
				require.NoError(t, fields.CheckContent(map[string]any{"never": nil}, forms.DefaultLimits))
				want := forms.CheckContent(tt.content, tt.limits)
				for range 3 {
					got := fields.CheckContent(tt.content, tt.limits)
					if want == nil {
						require.NoError(t, got)
						continue
					}
					require.Error(t, got)
					assert.Equal(t, want.Error(), got.Error())
				}
			})
		}
	}
}

// A name longer than MaxOtherName is not learned, and one that is
// learned does not take another's place: content holding either is
// still checked as CheckContent does.
func TestFieldsCheckContentLearnsOneShortName(t *testing.T) {
	long := strings.Repeat("n", forms.MaxOtherName+1)
	fields := fieldsNamed(t, "a")
	for _, c := range []map[string]any{
		{long: 1}, {long: math.NaN()}, {"b": 1}, {"c": 1}, {"b": math.NaN(), "a": 1}, {"c": math.NaN(), "a": 1},
		{"b": []any{math.Inf(1)}}, {"b": strings.Repeat("x", 1<<20)}, {"a": 1, "b": 2, "c": 3},
	} {
		want := forms.CheckContent(c, forms.DefaultLimits)
		assert.Equal(t, want, fields.CheckContent(c, forms.DefaultLimits), "%v", slices.Sorted(maps.Keys(c)))
	}
}

func TestFieldsCheckContentWithALearnedNameDoesNotAllocate(t *testing.T) {
	fields := fieldsNamed(t, "a")
	content := map[string]any{"a": 1, "action": "x"}
	require.NoError(t, fields.CheckContent(map[string]any{"action": 1}, forms.DefaultLimits))
	allocs := testing.AllocsPerRun(100, func() {
		if err := fields.CheckContent(content, forms.DefaultLimits); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// fieldsNamed returns the Fields of two message types that declare names
// between them.
func fieldsNamed(t *testing.T, names ...string) forms.Fields {
	t.Helper()
	var a, b []*policy.Field
	for i, n := range names {
		if i%2 == 0 {
			a = append(a, field(n, policy.TypeString, true))
		} else {
			b = append(b, field(n, policy.TypeInt, false))
		}
	}
	return forms.FieldsOf(form(t, "a", "inform", nil, a...), form(t, "b", "agree", nil, b...))
}

func TestFieldsOf(t *testing.T) {
	a := form(t, "a", "inform", nil, field("x", policy.TypeString, false), field("y", policy.TypeInt, true))
	b := form(t, "b", "agree", nil, field("y", policy.TypeInt, false), field("z", policy.TypeBool, false))
	tests := []struct {
		name  string
		forms []*forms.Form
		want  int
	}{
		{"a name two types declare counts once", []*forms.Form{a, b}, 3},
		{"no types", nil, 0},
		{"a type without fields", []*forms.Form{form(t, "c", "cancel", nil)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := forms.FieldsOf(tt.forms...)
			assert.Equal(t, tt.want, fs.Len())
		})
	}
}

// CheckContentField is CheckContentKinds, and hands back the value of
// the field asked for exactly when the kinds say it was found; a field
// the kinds say is absent is not in the content.
func TestFieldsCheckContentField(t *testing.T) {
	fs := fieldsNamed(t, "a", "b", "c")
	values := []any{nil, "x", 1, 1.5, true, time.Second, math.NaN(), []any{1}, map[string]any{"k": 1}}
	contents := []map[string]any{nil, {}, {"a": 1, "b": 2, "c": 3, "d": 4}}
	for _, v := range values {
		contents = append(contents, map[string]any{"a": v}, map[string]any{"b": v}, map[string]any{"a": "x", "b": v}, map[string]any{"b": v, "z": 1})
	}
	for _, c := range contents {
		wantKinds, wantErr := fs.CheckContentKinds(c, forms.DefaultLimits)
		for j := -1; j <= fs.Len(); j++ {
			kinds, v, err := fs.CheckContentField(c, forms.DefaultLimits, j)
			require.Equal(t, wantErr, err, "content %v, field %d", c, j)
			assert.Equal(t, wantKinds, kinds, "content %v, field %d", c, j)
			if kinds.Absent(j) {
				assert.False(t, kinds.Found(j), "content %v, field %d: found and absent", c, j)
				for _, n := range []string{"a", "b", "c"} {
					if fs.Position(n) == j {
						assert.NotContains(t, c, n, "content %v, field %d: absent", c, j)
					}
				}
			}
			if j < 0 || j >= fs.Len() || !kinds.Found(j) {
				assert.Nil(t, v, "content %v, field %d", c, j)
				continue
			}
			name := ""
			for _, n := range []string{"a", "b", "c"} {
				if fs.Position(n) == j {
					name = n
				}
			}
			want, ok := c[name]
			require.True(t, ok, "content %v: field %d found but not in content", c, j)
			if f, isFloat := want.(float64); !isFloat || !math.IsNaN(f) {
				assert.Equal(t, want, v, "content %v, field %d", c, j)
			}
		}
	}
}

// Content of scalar fields of the set is decided by looking them up,
// and the kinds tell every name's presence, those after the last field
// found included, for a Fields of more names than Kinds holds too.
func TestFieldsCheckContentKindsTellEveryName(t *testing.T) {
	names := make([]string, forms.MaxKinds+2)
	for j := range names {
		names[j] = fmt.Sprintf("f%d", j)
	}
	tests := []struct {
		name string
		has  []int // the positions of names content holds
	}{
		{"the first", []int{0}},
		{"the second", []int{1}},
		{"the first and the third", []int{0, 2}},
		{"the last Kinds holds", []int{forms.MaxKinds - 1}},
		{"one beyond", []int{forms.MaxKinds}},
		{"the first and one beyond", []int{0, forms.MaxKinds + 1}},
		{"all", func() []int {
			all := make([]int, len(names))
			for j := range all {
				all[j] = j
			}
			return all
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := fieldsNamed(t, names...)
			content := map[string]any{}
			for _, j := range tt.has {
				content[names[j]] = j
			}
			kinds, err := fs.CheckContentKinds(content, forms.DefaultLimits)
			require.NoError(t, err)
			for _, n := range names {
				j := fs.Position(n)
				require.GreaterOrEqual(t, j, 0)
				_, in := content[n]
				if j >= forms.MaxKinds {
					assert.False(t, kinds.Found(j) || kinds.Absent(j), "%s: beyond Kinds, unknown", n)
					continue
				}
				assert.Equal(t, in, kinds.Found(j), "%s found", n)
				assert.Equal(t, !in, kinds.Absent(j), "%s absent", n)
			}
		})
	}
}

func TestFieldsCheckContentDoesNotAllocate(t *testing.T) {
	content := typicalContent()
	fields := fieldsNamed(t, slices.Collect(maps.Keys(content))...)
	allocs := testing.AllocsPerRun(100, func() {
		if err := fields.CheckContent(content, forms.DefaultLimits); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// CheckValue judges a value as CheckContent judges a field holding it.
func TestCheckValue(t *testing.T) {
	tests := []struct {
		name  string
		value any
		want  string // the error, "" for none
	}{
		{"nil", nil, ""},
		{"a string", "x", ""},
		{"a list", []any{1, "x", map[string]any{"a": true}}, ""},
		{"NaN", math.NaN(), "the value holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry"},
		{"NaN in a list", []any{1, math.Inf(1)}, "the value holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry"},
		{"32 deep", nested(31, 1), ""},
		{"33 deep", nested(32, 1), "the value nests maps and lists more than 32 deep"},
		{"10,000 values", list(9_999), ""},
		{"10,001 values", list(10_000), "the value holds more than 10000 values"},
		{"a long string", strings.Repeat("x", 1<<20+1), "the value holds more than 1048576 bytes of keys and strings"},
		{"a Go slice", []string{"x"}, "the value holds a []string, which is not a JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := forms.CheckValue(tt.value, forms.DefaultLimits)
			field := forms.CheckContent(map[string]any{"": tt.value}, forms.DefaultLimits)
			if tt.want == "" {
				assert.NoError(t, err)
				assert.NoError(t, field)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			require.Error(t, field)
			assert.Equal(t, strings.Replace(tt.want, "the value", "content", 1), field.Error())
		})
	}
}

// What CheckContent lets through, a snapshot can write down.
func TestCheckedContentMarshals(t *testing.T) {
	content := map[string]any{"f": math.MaxFloat64, "t": time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), "j": json.Number("1e308"), "d": time.Duration(math.MaxInt64)}
	require.NoError(t, forms.CheckContent(content, forms.DefaultLimits))
	_, err := json.Marshal(content)
	assert.NoError(t, err)
}

func TestCheckContentDoesNotAllocate(t *testing.T) {
	content := typicalContent()
	allocs := testing.AllocsPerRun(100, func() {
		if err := forms.CheckContent(content, forms.DefaultLimits); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// typicalContent is content as FIPA conversations carry it.
func typicalContent() map[string]any {
	return map[string]any{
		"action": "paint the fence", "price": 10.5, "crates": 40, "done": true,
		"items": []any{"brush", "paint", map[string]any{"colour": "green", "litres": 2}},
		"terms": map[string]any{"due": "2026-03-01T09:00:00Z", "penalty": nil},
	}
}

func BenchmarkCheckContent(b *testing.B) {
	content := typicalContent()
	b.ReportAllocs()
	for b.Loop() {
		if err := forms.CheckContent(content, forms.DefaultLimits); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFieldsCheckContent checks content of one scalar field (a
// guarded ping's) and typical content, both by the names their message
// types declare.
func BenchmarkFieldsCheckContent(b *testing.B) {
	for _, bc := range []struct {
		name    string
		content map[string]any
	}{{"scalar", map[string]any{"n": 1}}, {"typical", typicalContent()}} {
		b.Run(bc.name, func(b *testing.B) {
			mt := &policy.MessageType{Name: "m", Performative: "inform"}
			for k := range bc.content {
				mt.Fields = append(mt.Fields, &policy.Field{Name: k, Type: policy.TypeAny})
			}
			f, err := forms.New(mt, nil)
			require.NoError(b, err)
			fields := forms.FieldsOf(f)
			b.ReportAllocs()
			for b.Loop() {
				if err := fields.CheckContent(bc.content, forms.DefaultLimits); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestSameContent(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 30, 500, time.UTC)
	tests := []struct {
		name string
		a, b map[string]any
		want bool
	}{
		{"both nil", nil, nil, true},
		{"nil and empty", nil, map[string]any{}, true},
		{"empty and not", map[string]any{}, map[string]any{"a": 1}, false},
		{"the same", typicalContent(), typicalContent(), true},
		{"an int and its float64", map[string]any{"n": 10}, map[string]any{"n": 10.0}, true},
		{"a json.Number and its float64", map[string]any{"n": json.Number("10.5")}, map[string]any{"n": 10.5}, true},
		{"other numbers", map[string]any{"n": 10}, map[string]any{"n": 10.5}, false},
		{"a number and a string", map[string]any{"n": 10}, map[string]any{"n": "10"}, false},
		{"a time and its RFC 3339 string", map[string]any{"t": at}, map[string]any{"t": "2026-03-01T09:00:30.0000005Z"}, true},
		{"a string and its time", map[string]any{"t": "2026-03-01T09:00:30.0000005Z"}, map[string]any{"t": at}, true},
		{"times", map[string]any{"t": at}, map[string]any{"t": at.In(time.FixedZone("x", 3600))}, false},
		{"the same times", map[string]any{"t": at}, map[string]any{"t": at}, true},
		{"a duration and its nanoseconds", map[string]any{"d": time.Second}, map[string]any{"d": 1e9}, true},
		{"bools", map[string]any{"b": true}, map[string]any{"b": false}, false},
		{"nulls", map[string]any{"x": nil}, map[string]any{"x": nil}, true},
		{"null and missing", map[string]any{"x": nil}, map[string]any{"y": nil}, false},
		{"null and a value", map[string]any{"x": nil}, map[string]any{"x": 0}, false},
		{"lists of other lengths", map[string]any{"l": []any{1}}, map[string]any{"l": []any{1, 2}}, false},
		{"lists that differ deep down", map[string]any{"l": []any{map[string]any{"a": 1}}}, map[string]any{"l": []any{map[string]any{"a": 2}}}, false},
		{"a list and a map", map[string]any{"l": []any{}}, map[string]any{"l": map[string]any{}}, false},
		{"32 deep", map[string]any{"x": nested(31, 1)}, map[string]any{"x": nested(31, 1.0)}, true},
		{"deeper is equal to nothing", map[string]any{"x": nested(32, 1)}, map[string]any{"x": nested(32, 1)}, false},
		{"a million deep", map[string]any{"x": nested(1_000_000, 1)}, map[string]any{"x": nested(1_000_000, 1)}, false},
		{"values JSON cannot carry", map[string]any{"l": []string{"x"}}, map[string]any{"l": []string{"x"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, forms.SameContent(tt.a, tt.b))
			assert.Equal(t, tt.want, forms.SameContent(tt.b, tt.a), "symmetric")
		})
	}
}

// Content of one field is decided whichever field the content checked
// before held (the Fields looks that one up first): the same error as
// CheckContent's, and kinds that tell the field found and every other
// name absent.
func TestFieldsCheckOneFieldWhateverCameBefore(t *testing.T) {
	names := make([]string, forms.MaxKinds+2)
	for j := range names {
		names[j] = fmt.Sprintf("f%d", j)
	}
	keys := append(slices.Clone(names), "other", "unknown")
	values := []any{nil, "x", strings.Repeat("x", forms.DefaultLimits.MaxBytes), 1, 1.5, 2.0, true, time.Second, math.NaN(), []any{1}, map[string]any{"k": 1}}
	for _, before := range keys {
		for _, key := range keys {
			t.Run(before+"/"+key, func(t *testing.T) {
				fs := fieldsNamed(t, names...)
				_, err := fs.CheckContentKinds(map[string]any{before: 1}, forms.DefaultLimits)
				require.NoError(t, err)
				j := fs.Position(key)
				for _, v := range values {
					content := map[string]any{key: v}
					kinds, got, err := fs.CheckContentField(content, forms.DefaultLimits, j)
					if want := forms.CheckContent(content, forms.DefaultLimits); want != nil {
						require.Error(t, err, "%v", v)
						assert.Equal(t, want.Error(), err.Error())
						continue
					}
					require.NoError(t, err, "%v", v)
					if j < 0 || kinds == 0 {
						assert.Nil(t, got, "%v", v)
						continue // decided by CheckContent: every kind unknown
					}
					for _, n := range names {
						p := fs.Position(n)
						if p >= forms.MaxKinds {
							assert.False(t, kinds.Found(p) || kinds.Absent(p), "%v, %s: beyond Kinds, unknown", v, n)
							continue
						}
						assert.Equal(t, n == key, kinds.Found(p), "%v, %s found", v, n)
						assert.Equal(t, n != key, kinds.Absent(p), "%v, %s absent", v, n)
					}
					if j < forms.MaxKinds {
						assert.Equal(t, v, got, "%v", v)
					}
				}
			})
		}
	}
}

// The zero Fields, which learns no name, gives CheckContent's answer:
// content of one field, which a Fields of FieldsOf looks up, is checked
// by iterating.
func TestZeroFieldsCheckContent(t *testing.T) {
	for _, tt := range contentCases() {
		t.Run(tt.name, func(t *testing.T) {
			var fields forms.Fields
			want := forms.CheckContent(tt.content, tt.limits)
			for range 3 {
				assert.Equal(t, want, fields.CheckContent(tt.content, tt.limits))
			}
		})
	}
}
