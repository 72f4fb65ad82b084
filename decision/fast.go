package decision

import (
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// presence is a boolean expression over which keys the content holds:
// "key" in content, its negation, and conjunctions and disjunctions of
// those. Match rules are mostly of this shape ('"result" in content'), and
// evaluating them natively skips the expression VM.
type presence struct {
	key         string
	not         bool
	op          string // "", "&&" or "||"
	left, right *presence
}

func (p *presence) eval(content map[string]any) bool {
	switch p.op {
	case "&&":
		return p.left.eval(content) && p.right.eval(content)
	case "||":
		return p.left.eval(content) || p.right.eval(content)
	}
	_, ok := content[p.key]
	return ok != p.not
}

// presenceOf returns the native form of src, or nil when src has another
// shape.
func presenceOf(src string) *presence {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil
	}
	return presenceNode(tree.Node)
}

func presenceNode(n ast.Node) *presence {
	switch n := n.(type) {
	case *ast.UnaryNode:
		if n.Operator != "!" && n.Operator != "not" {
			return nil
		}
		inner := presenceNode(n.Node)
		if inner == nil || inner.op != "" {
			return nil
		}
		inner.not = !inner.not
		return inner
	case *ast.BinaryNode:
		switch n.Operator {
		case "in":
			key, ok := n.Left.(*ast.StringNode)
			id, ok2 := n.Right.(*ast.IdentifierNode)
			if !ok || !ok2 || id.Value != "content" {
				return nil
			}
			return &presence{key: key.Value}
		case "&&", "and", "||", "or":
			l, r := presenceNode(n.Left), presenceNode(n.Right)
			if l == nil || r == nil {
				return nil
			}
			op := "&&"
			if n.Operator == "||" || n.Operator == "or" {
				op = "||"
			}
			return &presence{op: op, left: l, right: r}
		}
	}
	return nil
}
