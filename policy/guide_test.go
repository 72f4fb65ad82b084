package policy_test

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const guidePage = "guide.md"

// guideBlock is a YAML block of the guide and what its first line says
// it is: a whole policy that checks clean, one that gives exactly the
// codes after "# expect", or an excerpt of the policy after "# from".
type guideBlock struct {
	docBlock
	expect []string // codes a "# expect" policy gives
	from   string   // the policy a "# from" block is an excerpt of
	body   string   // the block without its first line, for an excerpt
}

func guideBlocks(t *testing.T) []guideBlock {
	t.Helper()
	var out []guideBlock
	for _, b := range docBlocks(t, guidePage) {
		if b.lang != "yaml" {
			continue
		}
		g := guideBlock{docBlock: b}
		first, rest, _ := strings.Cut(b.src, "\n")
		switch {
		case strings.HasPrefix(first, "# expect "):
			g.expect = strings.Fields(strings.TrimPrefix(first, "# expect "))
		case strings.HasPrefix(first, "# from "):
			g.from, g.body = strings.TrimSpace(strings.TrimPrefix(first, "# from ")), rest
		}
		out = append(out, g)
	}
	return out
}

// Every YAML block of the guide is validated: a whole policy loads and
// checks without a diagnostic, or with exactly the codes its "# expect"
// line names; an excerpt ("# from name") is a run of whole lines of the
// guide's policy of that name. A block that is neither fails.
func TestGuideYAMLBlocks(t *testing.T) {
	blocks := guideBlocks(t)
	whole := map[string]string{} // policy name → its source
	for _, b := range blocks {
		if b.from == "" && wholePolicy(b.docBlock) {
			p, _ := loadBlock(b.docBlock)
			if p != nil {
				whole[p.Name] = b.src
			}
		}
	}
	counts := map[string]int{}
	for _, b := range blocks {
		t.Run(b.page+":"+strconv.Itoa(b.line), func(t *testing.T) {
			switch {
			case b.from != "":
				counts["excerpt"]++
				src, ok := whole[b.from]
				require.True(t, ok, "docs/%s:%d: no whole policy %q in the guide to be an excerpt of", b.page, b.line, b.from)
				assert.True(t, strings.Contains("\n"+src, "\n"+b.body), "docs/%s:%d: not an excerpt of %s, line for line:\n%s", b.page, b.line, b.from, b.body)
			case wholePolicy(b.docBlock):
				p, ds := loadBlock(b.docBlock)
				require.NotNil(t, p, "docs/%s:%d: the block is no policy: %v", b.page, b.line, ds)
				var codes []string
				for _, d := range ds {
					codes = append(codes, string(d.Code))
				}
				if b.expect == nil {
					counts["clean"]++
					for _, d := range ds {
						t.Errorf("%s", at(b.docBlock, d))
					}
					return
				}
				counts["expect"]++
				slices.Sort(codes)
				assert.ElementsMatch(t, b.expect, slices.Compact(codes), "docs/%s:%d: the codes the block says it gives", b.page, b.line)
			default:
				t.Errorf("docs/%s:%d: a YAML block is a whole policy (policy: first) or says \"# from <policy>\"", b.page, b.line)
			}
		})
	}
	assert.GreaterOrEqual(t, counts["clean"], 3, "whole policies that check clean")
	assert.GreaterOrEqual(t, counts["expect"], 3, "policies that show a mistake")
	assert.GreaterOrEqual(t, counts["excerpt"], 5, "excerpts")
}

// The guide's booking policy is the one examples/booking runs, byte for
// byte: that example runs it between agents and explores it.
func TestGuideBookingIsTheExamples(t *testing.T) {
	file, err := os.ReadFile("../examples/booking/room-booking.yaml")
	require.NoError(t, err)
	var shown []string
	for _, b := range guideBlocks(t) {
		if b.from == "" && strings.HasPrefix(b.src, "policy: room-booking\n") {
			shown = append(shown, b.src)
		}
	}
	require.Len(t, shown, 1, "the guide shows room-booking once, whole")
	assert.Equal(t, string(file), shown[0])
}
