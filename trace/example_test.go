package trace_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/trace"
)

// ExampleCheck checks a recorded FIPA Request conversation: Bob agrees
// after the request's reply_by has passed.
func ExampleCheck() {
	const journal = `{"at": "2026-03-01T10:00:00Z", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1", "reply_by": "30s", "content": {"action": "paint the fence"}}
{"at": "45s", "performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}
`
	p, err := policies.Load("fipa-request")
	if err != nil {
		fmt.Println(err)
		return
	}
	entries, problems, err := trace.Read(strings.NewReader(journal))
	if err != nil {
		fmt.Println(err)
		return
	}
	// Without Bind, alice (the first line's sender) plays Initiator and
	// bob Participant.
	res, err := trace.Check(p, entries, problems, trace.Options{Resolve: policies.Resolve})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range res.Findings {
		fmt.Printf("line %d: %s: %s (%s): %s [%s]\n", f.Line, f.Severity, f.Agent, f.Role, f.Message, f.Code)
	}
	fmt.Printf("conforms: %v, complete: %v, outcomes: %v\n", res.Summary.Conforms, res.Summary.Complete, res.Summary.Outcomes)
	// Output:
	// line 2: error: bob (Participant): agree sent by "bob" is late: state "requested" timed out and the conversation ended with outcome "timeout" [PE004]
	// line 2: error: alice (Initiator): agree from "bob" is late: state "requested" timed out and the conversation ended with outcome "timeout" [PE004]
	// conforms: false, complete: true, outcomes: map[alice:timeout bob:timeout]
}

// ExampleWriter records messages as a trace, one JSON line each.
func ExampleWriter() {
	w := trace.NewWriter(os.Stdout)
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	_ = w.Write(start, &forms.Message{
		Performative: "query-if", Sender: "ui", Receivers: []string{"inventory"}, ConversationID: "q1",
		ReplyWith: "q1-1", ReplyBy: start.Add(10 * time.Second), Content: map[string]any{"proposition": "sku 4711 is in stock"},
	})
	_ = w.Write(start.Add(800*time.Millisecond), &forms.Message{
		Performative: "inform", Sender: "inventory", Receivers: []string{"ui"}, ConversationID: "q1",
		InReplyTo: "q1-1", Content: map[string]any{"holds": true},
	})
	// Output:
	// {"at":"2026-03-01T10:00:00Z","performative":"query-if","sender":"ui","receiver":"inventory","conversation_id":"q1","reply_with":"q1-1","reply_by":"2026-03-01T10:00:10Z","content":{"proposition":"sku 4711 is in stock"}}
	// {"at":"2026-03-01T10:00:00.8Z","performative":"inform","sender":"inventory","receiver":"ui","conversation_id":"q1","in_reply_to":"q1-1","content":{"holds":true}}
}

// A journal records the timers that fire as well as the messages, so
// that a conversation a timeout ended is seen to end: here bob never
// answers alice's request, and alice's reply timer fires at the request's
// reply_by. (agent.Manager calls WriteTimer for every timer that fires
// when its journal is a Writer.)
func ExampleWriter_WriteTimer() {
	var journal bytes.Buffer
	w := trace.NewWriter(&journal)
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	_ = w.Write(start, &forms.Message{
		Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "c1",
		ReplyBy: start.Add(30 * time.Second), Content: map[string]any{"action": "paint the fence"},
	})
	_ = w.WriteTimer(start.Add(30*time.Second), "alice", "c1", "reply")
	fmt.Print(journal.String())

	p, err := policies.Load("fipa-request")
	if err != nil {
		fmt.Println(err)
		return
	}
	entries, problems, err := trace.Read(&journal)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := trace.Check(p, entries, problems, trace.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("findings: %d, conforms: %v, complete: %v, outcomes: %v\n", len(res.Findings), res.Summary.Conforms, res.Summary.Complete, res.Summary.Outcomes)
	// Output:
	// {"at":"2026-03-01T10:00:00Z","performative":"request","sender":"alice","receiver":"bob","conversation_id":"c1","reply_by":"2026-03-01T10:00:30Z","content":{"action":"paint the fence"}}
	// {"at":"2026-03-01T10:00:30Z","timer":"reply","agent":"alice","conversation_id":"c1"}
	// findings: 0, conforms: true, complete: true, outcomes: map[alice:timeout bob:timeout]
}
