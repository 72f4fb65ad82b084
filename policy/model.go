package policy

import (
	"strings"
	"time"
)

// Policy is a conversation policy: a named, versioned protocol written as a
// third party overhearing the conversation would describe it. Both loaders
// produce it and both writers consume it; nothing in it depends on the file
// format it came from.
//
// A Policy is plain data. Load and check it once, then treat it as
// read-only: compiled programs share it between goroutines.
type Policy struct {
	Name    string
	Version string
	Doc     string
	Pos     Pos // the position of the policy's name

	Roles []*Role
	// Performatives are the extension performatives the policy declares:
	// communicative acts beyond FIPA's 22 (Agenor's notify) that its
	// message types may use.
	Performatives []Ref
	Messages      []*MessageType
	Timers        []*Timer
	Vars          []*Field // conversation variables, set by transition actions
	Commitments   []*Commitment
	// Budget bounds each run of the conversation; nil for none.
	Budget *Budget
	// Initial names the state the conversation starts in.
	Initial Ref
	States  []*State

	// loaded holds the diagnostics of loading the policy from its file.
	loaded Diagnostics
}

// Role is a part in a policy. A Many role is played by any number of peers
// at once (Contract Net's Participant): the other role keeps one session per
// peer.
type Role struct {
	Name string
	Pos  Pos
	Many bool
	Doc  string
}

// MessageType is a kind of message: its FIPA performative, the fields its
// content carries and an optional match rule that tells it apart from other
// types with the same performative (inform-done from inform-result).
type MessageType struct {
	Name         string
	Pos          Pos
	Performative string
	Fields       []*Field
	Match        *Expr
	Doc          string
}

// Field is a named, typed value: a field of message content or a
// conversation variable.
type Field struct {
	Name     string
	Pos      Pos
	Type     FieldType
	Optional bool
}

// FieldType is the type of a Field.
type FieldType string

// Field types. Time values are RFC 3339 strings on the wire; durations are
// Go duration strings.
const (
	TypeString   FieldType = "string"
	TypeNumber   FieldType = "number"
	TypeInt      FieldType = "int"
	TypeBool     FieldType = "bool"
	TypeTime     FieldType = "time"
	TypeDuration FieldType = "duration"
	TypeList     FieldType = "list"
	TypeMap      FieldType = "map"
	TypeAny      FieldType = "any"
)

// FieldTypes lists the valid field types.
var FieldTypes = []FieldType{TypeString, TypeNumber, TypeInt, TypeBool, TypeTime, TypeDuration, TypeList, TypeMap, TypeAny}

// Timer is a named timer a state can arm. It fires After a fixed duration,
// or at the Deadline read from a message (falling back to Default when the
// message carries none).
type Timer struct {
	Name     string
	Pos      Pos
	After    time.Duration
	Deadline *FieldRef
	Default  time.Duration
	Doc      string
}

// FieldRef names a value of the most recent message of a type: either an
// ACL parameter (reply_by) or a content field, as "message.field".
type FieldRef struct {
	Message string
	Field   string
	Pos     Pos
}

// String renders r as "message.field".
func (r FieldRef) String() string { return r.Message + "." + r.Field }

// ACLTimeParams lists the ACL parameters a timer deadline may read.
var ACLTimeParams = []string{"reply_by"}

// Commitment is an obligation C(debtor, creditor, antecedent, consequent)
// whose lifecycle the policy's messages drive. Sending a Create message
// creates it (detached at once when Detach is empty, since its antecedent
// is then true); a Detach message detaches it, a Discharge message
// discharges it, a Cancel message (by the debtor) cancels it, or violates
// it when already detached, and a Release message (by the creditor)
// releases it. Expires and Deadline name timers bounding the antecedent
// and the consequent.
type Commitment struct {
	Name      string
	Pos       Pos
	Debtor    Ref
	Creditor  Ref
	Create    []Ref
	Detach    []Ref
	Discharge []Ref
	Cancel    []Ref
	Release   []Ref
	Expires   Ref
	Deadline  Ref
	Doc       string
}

// Budget is a policy's run budget: the most messages one conversation
// exchanges (Messages), and the most times one state is entered
// (Visits, which bounds each loop's unfoldings), each counted by every
// role's handler for each of its sessions; 0 leaves one unbounded. A
// handler refuses a message that would go over it (protocol error
// PE017), and exploration reports a run that can (CP107).
type Budget struct {
	Messages int
	Visits   int
	Pos      Pos
}

// StateKind is the kind of a State, with cpXML's names.
type StateKind string

// State kinds.
const (
	KindNormal   StateKind = "normal"
	KindInChild  StateKind = "in-child"
	KindTerminal StateKind = "terminal"
)

// State is a state of the policy. A normal state waits for a message, a
// decision or a timer; an in-child state runs a child policy; a terminal
// state ends the conversation with Outcome.
//
// A Join state is a meeting point for the sessions of a many role: each
// session waits there until every live session has reached a join or
// terminal state (or an armed timer fires), and then one decision covers
// them all.
type State struct {
	Name        string
	Pos         Pos
	Kind        StateKind
	Outcome     string
	Join        bool
	Arm         []Ref
	Child       *ChildRef
	Decide      *Expr
	Transitions []*Transition
	Doc         string
}

// ChildRef names the child policy an in-child state runs, and binds each
// of the child's roles to a role of this policy.
type ChildRef struct {
	Policy   Ref
	Bindings []*RoleBinding
	Pos      Pos
}

// RoleBinding binds role Child of a child policy to role Parent of the
// parent policy.
type RoleBinding struct {
	Child  string
	Parent Ref
	Pos    Pos
}

// TransitionKind is the kind of a Transition, with cpXML's names.
type TransitionKind string

// Transition kinds.
const (
	SendMessage TransitionKind = "send-message"
	OnTimeout   TransitionKind = "on-timeout"
	ChildReturn TransitionKind = "child-return"
)

// Transition leaves a state. A send-message transition is taken when From
// sends Message to To; an on-timeout transition when Timer fires; a
// child-return transition when the child policy ends with Outcome. Guard,
// when present, must hold for the transition to be taken; Set assigns
// conversation variables when it is.
type Transition struct {
	Kind TransitionKind
	Pos  Pos
	// Key names a send-message transition among the choices of a decision
	// point. It defaults to the message type's name.
	Key     string
	Message Ref
	From    Ref
	To      Ref
	Timer   Ref
	Outcome string
	Next    Ref
	Guard   *Expr
	Set     []*Assign
	Doc     string
}

// MessageKey returns the transition's key: Key if set, else the message
// type's name.
func (t *Transition) MessageKey() string {
	if t.Key != "" {
		return t.Key
	}
	return t.Message.Name
}

// Assign sets conversation variable Var to the value of Expr.
type Assign struct {
	Var  Ref
	Expr *Expr
}

// Ref is a reference by name, with the position of the name.
type Ref struct {
	Name string
	Pos  Pos
}

// IsZero reports whether r names nothing.
func (r Ref) IsZero() bool { return r.Name == "" }

// Expr is an expression in the expr language embedded in a policy file.
// Pos is the position of its first character; continuation lines of a
// multi-line expression start at column Indent.
type Expr struct {
	Src    string
	Pos    Pos
	Indent int
}

// PosAt maps a position inside the expression (line 1-based, col 0-based,
// as expr reports them) to a position in the policy file.
func (e *Expr) PosAt(line, col int) Pos {
	if line <= 1 {
		return Pos{File: e.Pos.File, Line: e.Pos.Line, Col: e.Pos.Col + col}
	}
	indent := e.Indent
	if indent <= 0 {
		indent = 1
	}
	return Pos{File: e.Pos.File, Line: e.Pos.Line + line - 1, Col: indent + col}
}

// Role returns the role named name, or nil.
func (p *Policy) Role(name string) *Role {
	return find(p.Roles, name, func(r *Role) string { return r.Name })
}

// Message returns the message type named name, or nil.
func (p *Policy) Message(name string) *MessageType {
	return find(p.Messages, name, func(m *MessageType) string { return m.Name })
}

// Timer returns the timer named name, or nil.
func (p *Policy) Timer(name string) *Timer {
	return find(p.Timers, name, func(t *Timer) string { return t.Name })
}

// Var returns the conversation variable named name, or nil.
func (p *Policy) Var(name string) *Field {
	return find(p.Vars, name, func(f *Field) string { return f.Name })
}

// Commitment returns the commitment named name, or nil.
func (p *Policy) Commitment(name string) *Commitment {
	return find(p.Commitments, name, func(c *Commitment) string { return c.Name })
}

// State returns the state named name, or nil.
func (p *Policy) State(name string) *State {
	return find(p.States, name, func(s *State) string { return s.Name })
}

// Field returns the field named name, or nil.
func (m *MessageType) Field(name string) *Field {
	return find(m.Fields, name, func(f *Field) string { return f.Name })
}

func find[T any](list []T, name string, key func(T) string) T {
	for _, x := range list {
		if key(x) == name {
			return x
		}
	}
	var zero T
	return zero
}

// ParseFieldType parses a type such as "string", or "optional string"
// (also written "string?" where YAML allows it: not inside {...}).
func ParseFieldType(s string) (t FieldType, optional, ok bool) {
	s = strings.TrimSpace(s)
	if rest, found := strings.CutSuffix(s, "?"); found {
		optional, s = true, rest
	} else if rest, found := strings.CutPrefix(s, "optional "); found {
		optional, s = true, strings.TrimSpace(rest)
	}
	for _, ft := range FieldTypes {
		if string(ft) == s {
			return ft, optional, true
		}
	}
	return "", optional, false
}

// TypeString renders the field's type as the writers spell it
// ("optional string").
func (f *Field) TypeString() string {
	if f.Optional {
		return "optional " + string(f.Type)
	}
	return string(f.Type)
}
