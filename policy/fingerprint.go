package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"slices"
	"strconv"
	"time"
)

// Fingerprint returns a hash of the policy's canonical model, as
// "sha256:<hex>". It does not depend on the file format, key order,
// comments, positions or doc strings: the same policy written in YAML and
// in XML has the same fingerprint, and any change to what the policy
// allows changes it. Declarations are hashed in name order; transitions
// and assignments in their order, which is significant.
func (p *Policy) Fingerprint() string {
	h := sha256.New()
	w := canonWriter{h: h}
	w.str("policy", p.Name, p.Version)
	for _, r := range sortedBy(p.Roles, func(r *Role) string { return r.Name }) {
		w.str("role", r.Name, strconv.FormatBool(r.Many))
	}
	if len(p.Performatives) > 0 {
		w.str(append([]string{"performatives"}, sortedNames(p.Performatives)...)...)
	}
	for _, m := range sortedBy(p.Messages, func(m *MessageType) string { return m.Name }) {
		w.str("message", m.Name, m.Performative, exprSrc(m.Match))
		w.fields(m.Fields)
	}
	for _, t := range sortedBy(p.Timers, func(t *Timer) string { return t.Name }) {
		dl := ""
		if t.Deadline != nil {
			dl = t.Deadline.String()
		}
		w.str("timer", t.Name, t.After.String(), dl, t.Default.String())
	}
	w.str("vars")
	w.fields(p.Vars)
	for _, c := range sortedBy(p.Commitments, func(c *Commitment) string { return c.Name }) {
		w.str("commitment", c.Name, c.Debtor.Name, c.Creditor.Name, c.Expires.Name, c.Deadline.Name)
		for _, ops := range [][]Ref{c.Create, c.Detach, c.Discharge, c.Cancel, c.Release} {
			w.str(sortedNames(ops)...)
		}
	}
	if b := p.Budget; b != nil {
		w.str("budget", strconv.Itoa(b.Messages), strconv.Itoa(b.Visits))
	}
	w.str("initial", p.Initial.Name)
	for _, s := range sortedBy(p.States, func(s *State) string { return s.Name }) {
		w.str("state", s.Name, string(s.Kind), s.Outcome, strconv.FormatBool(s.Join), exprSrc(s.Decide))
		w.str(sortedNames(s.Arm)...)
		if s.Child != nil {
			w.str("child", s.Child.Policy.Name)
			for _, b := range sortedBy(s.Child.Bindings, func(b *RoleBinding) string { return b.Child }) {
				w.str(b.Child, b.Parent.Name)
			}
		}
		for _, t := range s.Transitions {
			w.str("transition", string(t.Kind), t.MessageKey(), t.Message.Name, t.From.Name, t.To.Name, t.Timer.Name, t.Outcome, t.Next.Name, exprSrc(t.Guard))
			for _, a := range t.Set {
				w.str("set", a.Var.Name, exprSrc(a.Expr))
			}
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// canonWriter writes length-prefixed strings, so that no two different
// models produce the same stream.
type canonWriter struct {
	h   hash.Hash
	buf []byte
}

func (w *canonWriter) str(ss ...string) {
	w.buf = strconv.AppendInt(w.buf[:0], int64(len(ss)), 10)
	w.buf = append(w.buf, '[')
	for _, s := range ss {
		w.buf = strconv.AppendInt(w.buf, int64(len(s)), 10)
		w.buf = append(w.buf, ':')
		w.buf = append(w.buf, s...)
	}
	w.buf = append(w.buf, ']')
	w.h.Write(w.buf)
}

func (w *canonWriter) fields(fs []*Field) {
	for _, f := range sortedBy(fs, func(f *Field) string { return f.Name }) {
		w.str("field", f.Name, string(f.Type), strconv.FormatBool(f.Optional))
	}
}

func exprSrc(e *Expr) string {
	if e == nil {
		return ""
	}
	return "=" + e.Src
}

func sortedBy[T any](list []T, key func(T) string) []T {
	out := slices.Clone(list)
	slices.SortStableFunc(out, func(a, b T) int {
		ka, kb := key(a), key(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	return out
}

func sortedNames(refs []Ref) []string {
	out := names(refs, func(r Ref) string { return r.Name })
	slices.Sort(out)
	return out
}

// FormatDuration renders d the way policy files write it: "30s", "5m",
// "1h30m", "250ms".
func FormatDuration(d time.Duration) string {
	s := d.String()
	for _, suffix := range []string{"m0s", "h0m"} {
		if len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix {
			s = s[:len(s)-len(suffix)+1]
		}
	}
	return s
}
