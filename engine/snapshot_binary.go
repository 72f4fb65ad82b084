package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// The binary snapshot format (version 3); Snapshot documents it.

// Value tags of the binary format.
const (
	tagNil byte = iota
	tagFalse
	tagTrue
	tagInt   // a varint: an integer-valued float64 of at most 2^53
	tagFloat // a float64's bits, little-endian
	tagString
	tagList
	tagMap
)

// Flags of the binary format.
const (
	flagStarted byte = 1 << iota
	flagDone
	flagAborted
)

// Times of the binary format: the zero time, or Unix seconds and
// nanoseconds in UTC or with a zone offset.
const (
	timeZero byte = iota
	timeUTC
	timeOffset
)

// Fingerprints of the binary format: a string, or a sha256 digest.
const (
	fingerprintString byte = iota
	fingerprintSHA256
)

const sha256Prefix = "sha256:"

// maxValueDepth is how deep maps and lists may nest in a snapshot, the
// content or variables map at depth 1: one deeper than content may
// (forms.DefaultLimits), so that Restore refuses content one too deep
// with forms' own error.
var maxValueDepth = forms.DefaultLimits.MaxDepth + 1

// maxExactInt is the largest integer a float64 holds exactly, and with
// all integers below it.
const maxExactInt = 1 << 53

// Earliest and latest Unix seconds of a time in the years 0 to 9999, in
// any zone.
var (
	minTimeSec = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Unix() - 86400
	maxTimeSec = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix() + 86400
)

func (h *Handler) appendSnapshot(b []byte) ([]byte, error) {
	sn := h.snapshotHeader()
	b = appendHeader(b, &sn)
	b = binary.AppendUvarint(b, uint64(len(h.sessions)))
	var commits [2]commitSnapshot
	var err error
	for i := range h.sessions {
		ss := h.sessionSnapshot(i, commits[:0])
		if b, err = appendSession(b, &ss); err != nil {
			return nil, fmt.Errorf("session %d: %w", i, err)
		}
	}
	return appendHelds(b, h.heldSnapshots())
}

// appendHeader appends the version and the fields of sn before its
// sessions.
func appendHeader(b []byte, sn *snapshot) []byte {
	b = append(b, snapshotVersion)
	b = appendFingerprint(b, sn.Fingerprint)
	for _, s := range []string{sn.Policy, sn.Role, sn.Conversation, sn.Self} {
		b = appendString(b, s)
	}
	var flags byte
	if sn.Started {
		flags |= flagStarted
	}
	if sn.Done {
		flags |= flagDone
	}
	if sn.Aborted {
		flags |= flagAborted
	}
	b = append(b, byte(sn.Mode), flags)
	b = binary.AppendUvarint(b, sn.Counter)
	b = binary.AppendUvarint(b, sn.Seq)
	b = appendStrings(b, sn.Peers)
	b = binary.AppendVarint(b, int64(sn.AtJoin))
	b = binary.AppendVarint(b, int64(sn.Ended))
	b = binary.AppendUvarint(b, sn.GroupTicket)
	return binary.AppendUvarint(b, sn.JoinTicket)
}

// appendHelds appends the held messages, the last of a snapshot.
func appendHelds(b []byte, held []heldSnapshot) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(held)))
	var err error
	for k := range held {
		if b, err = appendHeld(b, &held[k]); err != nil {
			return nil, fmt.Errorf("held message %d: %w", k, err)
		}
	}
	return b, nil
}

// appendFingerprint appends fp: a sha256 digest as its 32 bytes, any
// other fingerprint as a string.
func appendFingerprint(b []byte, fp string) []byte {
	if digest, ok := strings.CutPrefix(fp, sha256Prefix); ok && len(digest) == 64 {
		var raw [32]byte
		valid := true
		for k := range raw {
			hi, ok1 := fromHex(digest[2*k])
			lo, ok2 := fromHex(digest[2*k+1])
			valid = valid && ok1 && ok2
			raw[k] = hi<<4 | lo
		}
		if valid {
			return append(append(b, fingerprintSHA256), raw[:]...)
		}
	}
	return appendString(append(b, fingerprintString), fp)
}

// fromHex is the value of a lower-case hexadecimal digit, as
// hex.Encode writes them (so that the digest reads back the same).
func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

func appendSession(b []byte, ss *sessionSnapshot) ([]byte, error) {
	for _, s := range []string{ss.Peer, ss.State, ss.TimedOutFrom} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, ss.Epoch)
	b = binary.AppendUvarint(b, ss.Ticket)
	b = appendInt64s(b, ss.Deadlines)
	for _, s := range []string{ss.LastReplyWith, ss.LastInReplyTo, ss.LastMessage, ss.LastSender} {
		b = appendString(b, s)
	}
	b, err := appendMap(b, ss.Content, 1)
	if err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	b = appendString(b, ss.Sent[0])
	b = appendString(b, ss.Sent[1])
	if b, err = appendMap(b, ss.Vars, 1); err != nil {
		return nil, fmt.Errorf("variables: %w", err)
	}
	b = appendInt64s(b, ss.SrcTimes)
	b = binary.AppendUvarint(b, uint64(len(ss.Commits)))
	for _, c := range ss.Commits {
		b = appendString(b, string(c.State))
		b = binary.AppendUvarint(b, c.Epoch)
		b = binary.AppendVarint(b, c.Deadline)
	}
	b = binary.AppendVarint(b, int64(ss.Messages))
	b = binary.AppendUvarint(b, uint64(len(ss.Visits)))
	for _, v := range ss.Visits {
		b = binary.AppendVarint(b, int64(v))
	}
	return b, nil
}

func appendHeld(b []byte, hs *heldSnapshot) ([]byte, error) {
	b, err := appendTime(b, hs.At)
	if err != nil {
		return nil, err
	}
	b = appendString(b, hs.Performative)
	b = appendString(b, hs.Sender)
	b = appendStrings(b, hs.Receivers)
	b = appendString(b, hs.ReplyTo)
	if b, err = appendMap(b, hs.Content, 1); err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	for _, s := range []string{hs.Language, hs.Encoding, hs.Ontology, hs.Protocol, hs.ConversationID, hs.ReplyWith, hs.InReplyTo} {
		b = appendString(b, s)
	}
	return appendTime(b, hs.ReplyBy)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func appendInt64s(b []byte, ns []int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(ns)))
	for _, n := range ns {
		b = binary.AppendVarint(b, n)
	}
	return b
}

// appendTime appends t, which JSON could carry: a time in the years 0 to
// 9999.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	if t.IsZero() {
		return append(b, timeZero), nil
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("a time in the year %d, outside the years 0 to 9999", y)
	}
	_, offset := t.Zone()
	if offset == 0 {
		b = append(b, timeUTC)
	} else {
		b = append(b, timeOffset)
	}
	b = binary.AppendVarint(b, t.Unix())
	b = binary.AppendUvarint(b, uint64(t.Nanosecond()))
	if offset != 0 {
		b = binary.AppendVarint(b, int64(offset))
	}
	return b, nil
}

// appendMap appends m, at depth (1 for content or variables), its keys
// in increasing order; nil and empty maps alike.
func appendMap(b []byte, m map[string]any, depth int) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(m)))
	if len(m) == 0 {
		return b, nil
	}
	var buf [8]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var err error
	for _, k := range keys {
		b = appendString(b, k)
		if b, err = appendValue(b, m[k], depth+1); err != nil {
			return nil, fmt.Errorf("field %s: %w", policy.Quote(k), err)
		}
	}
	return b, nil
}

// appendValue appends v, at depth, as JSON would carry it (see Snapshot).
func appendValue(b []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, tagNil), nil
	case bool:
		if x {
			return append(b, tagTrue), nil
		}
		return append(b, tagFalse), nil
	case string:
		return appendString(append(b, tagString), x), nil
	case float64:
		return appendNumber(b, x)
	case map[string]any:
		if x == nil {
			return append(b, tagNil), nil
		}
		if depth > maxValueDepth {
			return nil, errTooDeep
		}
		return appendMap(append(b, tagMap), x, depth)
	case []any:
		if x == nil {
			return append(b, tagNil), nil
		}
		if depth > maxValueDepth {
			return nil, errTooDeep
		}
		b = binary.AppendUvarint(append(b, tagList), uint64(len(x)))
		var err error
		for k, e := range x {
			if b, err = appendValue(b, e, depth+1); err != nil {
				return nil, fmt.Errorf("item %d: %w", k, err)
			}
		}
		return b, nil
	case int:
		return appendNumber(b, float64(x))
	case int64:
		return appendNumber(b, float64(x))
	case int32:
		return appendNumber(b, float64(x))
	case int16:
		return appendNumber(b, float64(x))
	case int8:
		return appendNumber(b, float64(x))
	case uint:
		return appendNumber(b, float64(x))
	case uint64:
		return appendNumber(b, float64(x))
	case uint32:
		return appendNumber(b, float64(x))
	case uint16:
		return appendNumber(b, float64(x))
	case uint8:
		return appendNumber(b, float64(x))
	case time.Duration:
		return appendNumber(b, float64(x))
	case float32:
		// JSON writes a float32 as the shortest decimal that is it, and
		// reads that decimal back as a float64.
		var buf [32]byte
		f, err := strconv.ParseFloat(string(strconv.AppendFloat(buf[:0], float64(x), 'g', -1, 32)), 64)
		if err != nil {
			return nil, errNotFinite
		}
		return appendNumber(b, f)
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, fmt.Errorf("json.Number %s is not a number JSON can carry", policy.Quote(string(x)))
		}
		return appendNumber(b, f)
	case time.Time:
		if y := x.Year(); y < 0 || y > 9999 {
			return nil, fmt.Errorf("a time in the year %d, outside the years 0 to 9999", y)
		}
		var buf [64]byte
		t := x.AppendFormat(buf[:0], time.RFC3339Nano)
		return append(binary.AppendUvarint(append(b, tagString), uint64(len(t))), t...), nil
	}
	// Another type (the engine lets none in): the value JSON makes of it.
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var back any
	if err := json.Unmarshal(raw, &back); err != nil {
		return nil, err
	}
	return appendValue(b, back, depth)
}

// appendNumber appends f: an integer of at most 2^53 (but -0) as a
// varint, any other finite number as its bits.
func appendNumber(b []byte, f float64) ([]byte, error) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return nil, errNotFinite
	case f == math.Trunc(f) && math.Abs(f) <= maxExactInt && (f != 0 || !math.Signbit(f)):
		return binary.AppendVarint(append(b, tagInt), int64(f)), nil
	}
	return binary.LittleEndian.AppendUint64(append(b, tagFloat), math.Float64bits(f)), nil
}

var (
	errNotFinite = errors.New("a number that is not finite (NaN or an infinity), which JSON cannot carry")
	errTooDeep   = fmt.Errorf("maps and lists nested more than %d deep", maxValueDepth)
	errTruncated = errors.New("binary snapshot: truncated")
)

// snapReader reads a binary snapshot. Its first error sticks: every read
// after it returns a zero value, so a caller checks once.
type snapReader struct {
	data []byte
	off  int
	err  error
	pr   *Program // lends names, when not nil
}

func (r *snapReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *snapReader) left() int { return len(r.data) - r.off }

func (r *snapReader) byte() byte {
	if r.err != nil || r.off >= len(r.data) {
		r.fail(errTruncated)
		return 0
	}
	c := r.data[r.off]
	r.off++
	return c
}

func (r *snapReader) uvarint() uint64 { return readNumber(r, binary.Uvarint) }

func (r *snapReader) varint() int64 { return readNumber(r, binary.Varint) }

// readNumber reads a uvarint or a varint with read.
func readNumber[T uint64 | int64](r *snapReader, read func([]byte) (T, int)) T {
	if r.err != nil {
		return 0
	}
	v, n := read(r.data[r.off:])
	switch {
	case n == 0:
		r.fail(errTruncated)
		return 0
	case n < 0:
		r.fail(fmt.Errorf("binary snapshot: a number at byte %d overflows 64 bits", r.off))
		return 0
	}
	r.off += n
	return v
}

func (r *snapReader) int32(what string) int32 {
	off := r.off
	v := r.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail(fmt.Errorf("binary snapshot: %s %d at byte %d is out of range", what, v, off))
		return 0
	}
	return int32(v)
}

// count reads a count of items of at least size bytes each, bounded by
// the bytes left.
func (r *snapReader) count(size int) int {
	off := r.off
	n := r.uvarint()
	if n > uint64(r.left()/size) {
		r.fail(fmt.Errorf("binary snapshot: a count of %d at byte %d, more than the %d bytes left hold", n, off, r.left()))
		return 0
	}
	return int(n)
}

func (r *snapReader) bytes() []byte {
	n := r.count(1)
	if r.err != nil {
		return nil
	}
	b := r.data[r.off : r.off+n : r.off+n]
	r.off += n
	return b
}

func (r *snapReader) str() string { return string(r.bytes()) }

// name reads a string that is most often one of known, and then needs no
// copy.
func (r *snapReader) name(known func(b []byte) (string, bool)) string {
	b := r.bytes()
	if s, ok := known(b); ok {
		return s
	}
	return string(b)
}

func (r *snapReader) stateName(b []byte) (string, bool) {
	if r.pr == nil {
		return "", false
	}
	k, ok := r.pr.stateIndex[string(b)]
	if !ok {
		return "", false
	}
	return r.pr.states[k].name, true
}

func (r *snapReader) messageName(b []byte) (string, bool) {
	if r.pr == nil {
		return "", false
	}
	for k := range r.pr.msgs {
		if m := r.pr.msgs[k].name; m == string(b) {
			return m, true
		}
	}
	return "", false
}

func commitmentState(b []byte) (string, bool) {
	for _, s := range []CommitmentState{CommitmentConditional, CommitmentDetached, CommitmentDischarged, CommitmentViolated, CommitmentExpired, CommitmentCancelled, CommitmentReleased} {
		if string(s) == string(b) {
			return string(s), true
		}
	}
	return "", false
}

// decodeBinary reads a binary snapshot into the struct the JSON format
// decodes into, for restore to check alike.
func decodeBinary(data []byte, pr *Program) (*snapshot, error) {
	if v := data[0]; v != snapshotVersion {
		return nil, fmt.Errorf("snapshot format version %d, want %d", v, snapshotVersion)
	}
	r := &snapReader{data: data, off: 1, pr: pr}
	sn := &snapshot{Version: jsonSnapshotVersion}
	sn.Fingerprint = r.fingerprint()
	sn.Policy = r.name(func(b []byte) (string, bool) {
		if pr == nil || pr.policy.Name != string(b) {
			return "", false
		}
		return pr.policy.Name, true
	})
	sn.Role = r.name(func(b []byte) (string, bool) {
		if pr == nil || pr.role != string(b) {
			return "", false
		}
		return pr.role, true
	})
	sn.Conversation, sn.Self = r.str(), r.str()
	sn.Mode = Mode(r.byte())
	flags := r.byte()
	if flags&^(flagStarted|flagDone|flagAborted) != 0 {
		r.fail(fmt.Errorf("binary snapshot: flags %#x", flags))
	}
	sn.Started, sn.Done, sn.Aborted = flags&flagStarted != 0, flags&flagDone != 0, flags&flagAborted != 0
	sn.Counter, sn.Seq = r.uvarint(), r.uvarint()
	sn.Peers = r.strings(true)
	sn.AtJoin, sn.Ended = r.int32("sessions at the join"), r.int32("ended sessions")
	sn.GroupTicket, sn.JoinTicket = r.uvarint(), r.uvarint()
	if n := r.count(minSessionBytes); n > 0 {
		sn.Sessions = make([]sessionSnapshot, n)
		for i := range sn.Sessions {
			r.session(&sn.Sessions[i])
		}
	}
	if n := r.count(minHeldBytes); n > 0 {
		sn.Held = make([]heldSnapshot, n)
		for k := range sn.Held {
			r.held(&sn.Held[k])
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.left() > 0 {
		return nil, errors.New("data after the snapshot")
	}
	return sn, nil
}

// The fewest bytes a session and a held message take.
const (
	minSessionBytes = 18 // 16 empty strings, lists, maps and counts, two zeros
	minHeldBytes    = 14 // two zero times, 12 empty strings, lists and maps
)

func (r *snapReader) fingerprint() string {
	switch kind := r.byte(); kind {
	case fingerprintString:
		return r.name(func(b []byte) (string, bool) {
			if r.pr == nil || r.pr.fingerprint != string(b) {
				return "", false
			}
			return r.pr.fingerprint, true
		})
	case fingerprintSHA256:
		if r.left() < 32 {
			r.fail(errTruncated)
			return ""
		}
		var buf [64]byte
		hex.Encode(buf[:], r.data[r.off:r.off+32])
		r.off += 32
		if r.pr != nil && strings.TrimPrefix(r.pr.fingerprint, sha256Prefix) == string(buf[:]) && strings.HasPrefix(r.pr.fingerprint, sha256Prefix) {
			return r.pr.fingerprint
		}
		return sha256Prefix + string(buf[:])
	default:
		if r.err == nil {
			r.fail(fmt.Errorf("binary snapshot: fingerprint kind %d", kind))
		}
		return ""
	}
}

// strings reads a list of strings; an empty one is nil unless keep.
func (r *snapReader) strings(keep bool) []string {
	n := r.count(1)
	if n == 0 {
		if keep && r.err == nil {
			return []string{}
		}
		return nil
	}
	out := make([]string, n)
	for k := range out {
		out[k] = r.str()
	}
	return out
}

func (r *snapReader) int64s() []int64 {
	n := r.count(1)
	if n == 0 {
		return nil
	}
	out := make([]int64, n)
	for k := range out {
		out[k] = r.varint()
	}
	return out
}

func (r *snapReader) session(ss *sessionSnapshot) {
	ss.Peer = r.str()
	ss.State = r.name(r.stateName)
	ss.TimedOutFrom = r.name(r.stateName)
	ss.Epoch, ss.Ticket = r.uvarint(), r.uvarint()
	ss.Deadlines = r.int64s()
	ss.LastReplyWith, ss.LastInReplyTo = r.str(), r.str()
	ss.LastMessage = r.name(r.messageName)
	ss.LastSender = r.str()
	ss.Content = r.fields(1)
	ss.Sent = [2]string{r.str(), r.str()}
	ss.Vars = r.fields(1)
	ss.SrcTimes = r.int64s()
	if n := r.count(3); n > 0 {
		ss.Commits = make([]commitSnapshot, n)
		for k := range ss.Commits {
			c := &ss.Commits[k]
			c.State = CommitmentState(r.name(commitmentState))
			c.Epoch, c.Deadline = r.uvarint(), r.varint()
		}
	}
	ss.Messages = r.int32("messages")
	if n := r.count(1); n > 0 {
		ss.Visits = make([]int32, n)
		for k := range ss.Visits {
			ss.Visits[k] = r.int32("visits")
		}
	}
}

func (r *snapReader) held(hs *heldSnapshot) {
	hs.At = r.time()
	hs.Performative, hs.Sender = r.str(), r.str()
	hs.Receivers = r.strings(false)
	hs.ReplyTo = r.str()
	hs.Content = r.fields(1)
	hs.Language, hs.Encoding, hs.Ontology, hs.Protocol = r.str(), r.str(), r.str(), r.str()
	hs.ConversationID, hs.ReplyWith, hs.InReplyTo = r.str(), r.str(), r.str()
	hs.ReplyBy = r.time()
}

func (r *snapReader) time() time.Time {
	off := r.off
	kind := r.byte()
	if kind == timeZero || r.err != nil {
		return time.Time{}
	}
	if kind != timeUTC && kind != timeOffset {
		r.fail(fmt.Errorf("binary snapshot: time kind %d at byte %d", kind, off))
		return time.Time{}
	}
	sec, nsec := r.varint(), r.uvarint()
	var offset int64
	if kind == timeOffset {
		offset = r.varint()
	}
	if r.err != nil {
		return time.Time{}
	}
	if sec < minTimeSec || sec > maxTimeSec || nsec >= 1e9 || offset <= -86400 || offset >= 86400 || kind == timeOffset && offset == 0 {
		r.fail(fmt.Errorf("binary snapshot: the time at byte %d is out of range", off))
		return time.Time{}
	}
	t := time.Unix(sec, int64(nsec)).UTC()
	if kind == timeOffset {
		t = t.In(time.FixedZone("", int(offset)))
	}
	if y := t.Year(); y < 0 || y > 9999 {
		r.fail(fmt.Errorf("binary snapshot: the time at byte %d is in the year %d, outside the years 0 to 9999", off, y))
		return time.Time{}
	}
	return t
}

// fields reads a map at depth; an empty one is nil at depth 1 (content
// and variables, as JSON omits them), an empty map deeper.
func (r *snapReader) fields(depth int) map[string]any {
	n := r.count(2)
	if r.err != nil || n == 0 && depth == 1 {
		return nil
	}
	m := make(map[string]any, n)
	var prev []byte
	for k := range n {
		off := r.off
		key := r.bytes()
		if r.err != nil {
			return nil
		}
		if k > 0 && bytes.Compare(prev, key) >= 0 {
			r.fail(fmt.Errorf("binary snapshot: the key at byte %d is not after the one before it", off))
			return nil
		}
		prev = key
		m[string(key)] = r.value(depth + 1)
	}
	return m
}

func (r *snapReader) value(depth int) any {
	off := r.off
	switch tag := r.byte(); tag {
	case tagNil:
		return nil
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagInt:
		return float64(r.varint())
	case tagFloat:
		if r.left() < 8 {
			r.fail(errTruncated)
			return nil
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(r.data[r.off:]))
		r.off += 8
		if math.IsNaN(f) || math.IsInf(f, 0) {
			r.fail(fmt.Errorf("binary snapshot: at byte %d, %w", off, errNotFinite))
		}
		return f
	case tagString:
		return r.str()
	case tagList, tagMap:
		if depth > maxValueDepth {
			r.fail(fmt.Errorf("binary snapshot: at byte %d, %w", off, errTooDeep))
			return nil
		}
		if tag == tagMap {
			return r.fields(depth)
		}
		n := r.count(1)
		if r.err != nil {
			return nil
		}
		l := make([]any, n)
		for k := range l {
			l[k] = r.value(depth + 1)
		}
		return l
	default:
		if r.err == nil {
			r.fail(fmt.Errorf("binary snapshot: value tag %d at byte %d", tag, off))
		}
		return nil
	}
}
