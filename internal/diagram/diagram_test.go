package diagram

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMermaidIDs(t *testing.T) {
	nodes := []node{{name: "timed-out"}, {name: "timed_out"}, {name: "default"}, {name: "a|b"}, {name: "state"}, {name: "timed.out"}}
	assert.Equal(t, []string{"s_timed_out", "s_timed_out_2", "s_default", "s_a_b", "s_state", "s_timed_out_3"}, mermaidIDs(nodes))
}

func TestMermaidText(t *testing.T) {
	assert.Equal(t, "A→B#58; m [x #62; 1 #38;#38; y#59; #35;z #37;#37; w]", mermaidText("A→B: m [x > 1 && y; #z %% w]"))
	assert.Equal(t, "a b", mermaidText("a\nb"))
}

func TestDotQuote(t *testing.T) {
	assert.Equal(t, `"a \"b\" \\ c\nd"`, dotQuote("a \"b\" \\ c\nd"))
}
