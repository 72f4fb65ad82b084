package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// Reasons quote what a peer controls with policy.Quote: a megabyte
// sender, performative, conversation id, in-reply-to or outcome shows as
// its first 64 bytes and an ellipsis, so no reason echoes it whole.
func TestReasonsBoundPeerStrings(t *testing.T) {
	huge := strings.Repeat("m", 1<<20)
	quoted := policy.Quote(huge)
	require.Len(t, quoted, 2+policy.MaxQuoted+len("…"))
	request := func(c *conv) {
		seq(start(), sayBy("alice", "request", content{"action": "paint"}, 30*time.Second))(c)
	}
	tests := []struct {
		name   string
		policy string
		setup  func(c *conv)
		do     action
		code   engine.ErrorCode
	}{
		{name: "a sender bound to nothing", policy: "fipa-request", setup: request,
			do: recv("alice", msg("agree", huge, "alice", nil)), code: engine.CodeUnknownAgent},
		{name: "a sender with no session", policy: "fipa-contract-net", setup: func(c *conv) {
			seq(start(), say("alice", "cfp", content{"task": "t"}))(c)
		}, do: recv("alice", msg("propose", huge, "alice", nil)), code: engine.CodeUnknownAgent},
		{name: "a performative the policy does not know", policy: "fipa-request", setup: request,
			do: recv("alice", msg(huge, "bob", "alice", nil)), code: engine.CodeUnexpected},
		{name: "a performative after the end", policy: "fipa-request", setup: func(c *conv) {
			request(c)
			say("bob", "refuse", nil)(c)
		}, do: recv("alice", msg(huge, huge, "alice", nil)), code: engine.CodeEnded},
		{name: "a performative its own agent sent", policy: "fipa-request", setup: request,
			do: sent("alice", msg(huge, huge, "bob", nil)), code: engine.CodeUnexpected},
		{name: "a conversation id", policy: "fipa-request", setup: request,
			do: recv("alice", with(msg("agree", "bob", "alice", nil), func(m *forms.Message) { m.ConversationID = huge })), code: engine.CodeWrongConversation},
		{name: "an in-reply-to", policy: "fipa-request", setup: request,
			do: recv("alice", with(msg("agree", "bob", "alice", nil), func(m *forms.Message) { m.InReplyTo = huge })), code: engine.CodeWrongReply},
		{name: "content that breaks a limit", policy: "fipa-request", setup: request,
			do: recv("alice", msg(huge, huge, "alice", content{"x": deepList(40, 1)})), code: engine.CodeContentLimit},
		{name: "a choice", policy: "fipa-request", setup: func(c *conv) { start()(c) },
			do: say("alice", huge, nil), code: engine.CodeChoiceNotAllowed},
		{name: "a join answer for a peer that is not waiting", policy: "fipa-contract-net", setup: func(c *conv) {
			seq(start(), say("alice", "cfp", content{"task": "t"}), say("bob", "propose", content{"price": 1}), say("carol", "refuse", nil), say("dave", "refuse", nil))(c)
		}, do: answer("alice", "join", decision.Answer{Sessions: map[string]decision.SessionAnswer{
			"bob": {Choice: "reject-proposal"}, huge: {Choice: "accept-proposal"},
		}}), code: engine.CodeStaleDecision},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConv(t, tt.policy, cast(tt.policy))
			tt.setup(c)
			c.out = c.out[:0]
			tt.do(c)
			var found bool
			for _, line := range c.out {
				assert.Less(t, len(line), 1024, "an unbounded line: %.200s…", line)
				if strings.Contains(line, "error "+string(tt.code)) {
					found = true
					assert.Contains(t, line, quoted)
				}
			}
			assert.True(t, found, "no %s in %v", tt.code, c.out)
		})
	}
}

// A child's end carries an outcome from the runtime; it is quoted too.
func TestChildOutcomeIsBounded(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	progs := map[string]*engine.Program{"alice": fuzzProgram(t, "setup-then-request", "Initiator")}
	c := newConvOf(t, progs, agent{"alice", "Initiator", []engine.HandlerOption{engine.WithPeers("Participant", "bob")}})
	start()(c)
	c.out = c.out[:0]
	childEnds("alice", huge, 0)(c)
	require.Len(t, c.out, 1)
	assert.Equal(t, `alice: error PE001 [start]: child policy "conversation-setup" ended with outcome `+policy.Quote(huge)+`, which state "start" does not handle`, c.out[0])
}
