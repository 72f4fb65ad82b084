package policy

import (
	"strconv"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
)

// exprParser parses the sources of the simple shapes ExprTypeOf types
// into the tree expr's parser (parser.Parse) makes of them: the same
// nodes, with the same values and locations, so that expr's checker and
// compiler could take it and every diagnostic stays expr's. It reads
// ASCII sources made of names, fields by '.', decimal integer and float
// literals, quoted strings without escapes, true and false, parentheses,
// the unary operators ! not - + and the binary operators or || and &&
// == != < > <= >= in "not in" + - * / % ** ^. Anything else, and every
// source expr would reject, it leaves to expr's parser (parse returns
// false), as it does a tree of more than MaxExprNodes/2 nodes or nested
// deeper than maxNativeDepth.
//
// Its nodes come from blocks it reuses: a tree parse returns is valid
// until the next parse, so it is for a caller that keeps nothing of it
// (as the expressions check lends its trees). An exprParser is for one
// goroutine at a time; the zero value is ready for use.
type exprParser struct {
	src    string
	off    int // the next byte to read
	tok    exprToken
	stash  exprToken // a token read ahead (see expression)
	stashd bool
	nodes  int
	depth  int
	failed bool
	// num is the value of p.tok when it is a number: an int, or a float
	// when isFloat.
	num struct {
		isFloat bool
		i       int64
		f       float64
	}

	idents  nodeBlock[ast.IdentifierNode]
	members nodeBlock[ast.MemberNode]
	strs    nodeBlock[ast.StringNode]
	ints    nodeBlock[ast.IntegerNode]
	floats  nodeBlock[ast.FloatNode]
	bools   nodeBlock[ast.BoolNode]
	unaries nodeBlock[ast.UnaryNode]
	binarys nodeBlock[ast.BinaryNode]
}

// maxNativeDepth bounds how deeply exprParser recurses (parentheses and
// operators nested in one another); a deeper source goes to expr.
const maxNativeDepth = 64

// nodeBlock hands out nodes of one type from a block that parse reuses:
// reset makes its nodes free again. A block that fills is replaced by
// one twice its size, the old one kept by the tree that points into it.
type nodeBlock[T any] struct {
	block []T
	used  int
}

func (b *nodeBlock[T]) new() *T {
	if b.used == len(b.block) {
		b.block = make([]T, max(16, 2*len(b.block)))
		b.used = 0
	}
	n := &b.block[b.used]
	b.used++
	var zero T
	*n = zero
	return n
}

func (b *nodeBlock[T]) reset() { b.used = 0 }

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokName
	tokNumber
	tokString
	tokOperator
	tokOpen  // (
	tokClose // )
)

// exprToken is a token as expr's lexer makes it: its kind, its text (a
// string's without the quotes) and its location in runes, here bytes.
type exprToken struct {
	kind  tokenKind
	value string
	loc   file.Location
}

func (t exprToken) is(kind tokenKind, value string) bool {
	return t.kind == kind && t.value == value
}

// parse returns the tree of src, and false when src is not of the shapes
// the parser reads (expr's parser then decides).
// Only an ASCII source is read (so that expr's locations, in runes, are
// bytes): the lexer fails on any other byte, inside a string too.
func (p *exprParser) parse(src string) (ast.Node, bool) {
	p.src, p.off, p.stashd, p.nodes, p.depth, p.failed = src, 0, false, 0, 0, false
	p.idents.reset()
	p.members.reset()
	p.strs.reset()
	p.ints.reset()
	p.floats.reset()
	p.bools.reset()
	p.unaries.reset()
	p.binarys.reset()
	p.next()
	node := p.expression(0)
	if p.failed || p.tok.kind != tokEOF {
		return nil, false
	}
	return node, true
}

func (p *exprParser) fail() { p.failed = true }

// created counts a node against the limit and sets its location.
func (p *exprParser) created(n ast.Node, loc file.Location) {
	p.nodes++
	if p.nodes > MaxExprNodes/2 {
		p.fail()
	}
	n.SetLocation(loc)
}

// next reads the next token into p.tok, as expr's lexer does, failing on
// what the parser does not read.
func (p *exprParser) next() {
	if p.stashd {
		p.tok, p.stashd = p.stash, false
		return
	}
	src := p.src
	for p.off < len(src) && isExprSpace(src[p.off]) {
		p.off++
	}
	start := p.off
	emit := func(kind tokenKind, end int, value string) {
		p.tok = exprToken{kind: kind, value: value, loc: file.Location{From: start, To: end}}
		p.off = end
	}
	if start == len(src) {
		// expr's EOF token stands on the last character; nothing here
		// reads its location.
		p.tok = exprToken{kind: tokEOF}
		return
	}
	c := src[start]
	switch {
	case (c == 'b' || c == 'B') && start+1 < len(src) && (src[start+1] == '"' || src[start+1] == '\''):
		p.fail() // a bytes literal
	case isLetter(c):
		p.name(start)
	case c == '"' || c == '\'':
		end := start + 1
		for end < len(src) && src[end] != c {
			if src[end] == '\\' || src[end] == '\n' || src[end] == '\r' || src[end] >= 0x80 {
				p.fail()
				return
			}
			end++
		}
		if end == len(src) {
			p.fail()
			return
		}
		emit(tokString, end+1, src[start+1:end])
	case isDigit(c):
		p.number(start)
	case c == '(':
		emit(tokOpen, start+1, "(")
	case c == ')':
		emit(tokClose, start+1, ")")
	case c == '.':
		if start+1 < len(src) && (isDigit(src[start+1]) || src[start+1] == '.') {
			p.fail()
			return
		}
		emit(tokOperator, start+1, ".")
	case c == '%' || c == '+' || c == '-' || c == '^':
		emit(tokOperator, start+1, src[start:start+1])
	case c == '/':
		if start+1 < len(src) && (src[start+1] == '/' || src[start+1] == '*') {
			p.fail() // a comment
			return
		}
		emit(tokOperator, start+1, "/")
	case c == '|':
		if start+1 < len(src) && src[start+1] == '|' {
			emit(tokOperator, start+2, "||")
			return
		}
		p.fail()
	case c == '&' || c == '!' || c == '=' || c == '*' || c == '<' || c == '>':
		end := start + 1
		if end < len(src) && (src[end] == '&' || src[end] == '=' || src[end] == '*') {
			end++
		}
		switch op := src[start:end]; op {
		case "&&", "!", "!=", "==", "*", "**", "<", "<=", ">", ">=":
			emit(tokOperator, end, op)
		default:
			p.fail()
		}
	default:
		p.fail()
	}
}

// name reads a name, or a word operator, from src[start], a letter.
func (p *exprParser) name(start int) {
	src := p.src
	end := start + 1
	for end < len(src) && isLetterOrDigit(src[end]) {
		end++
	}
	if end < len(src) && src[end] == '$' {
		p.fail()
		return
	}
	switch word := src[start:end]; word {
	case "not", "in", "or", "and":
		p.tok = exprToken{kind: tokOperator, value: word, loc: file.Location{From: start, To: end}}
		p.off = end
	case "matches", "contains", "startsWith", "endsWith", "let", "if", "else", "nil":
		p.fail()
	default:
		p.tok = exprToken{kind: tokName, value: word, loc: file.Location{From: start, To: end}}
		p.off = end
	}
}

// number reads a decimal integer or a float with digits after its point.
func (p *exprParser) number(start int) {
	src := p.src
	end := start
	digits := func() int {
		from := end
		for end < len(src) && isDigit(src[end]) {
			end++
		}
		return end - from
	}
	if src[end] == '0' && end+1 < len(src) && isLetter(src[end+1]) {
		p.fail() // 0x, 0o, 0b, or a bad number
		return
	}
	digits()
	float := false
	if end < len(src) && src[end] == '.' {
		if end+1 < len(src) && src[end+1] == '.' {
			p.fail() // a range
			return
		}
		end++
		if digits() == 0 {
			p.fail()
			return
		}
		float = true
	}
	if end < len(src) && (isLetterOrDigit(src[end]) || src[end] == '$' || src[end] == '.') {
		p.fail() // an exponent, a bad number, or a member of a number
		return
	}
	text := src[start:end]
	p.tok = exprToken{kind: tokNumber, value: text, loc: file.Location{From: start, To: end}}
	p.off = end
	var err error
	p.num.isFloat = float
	switch {
	case float:
		p.num.f, err = strconv.ParseFloat(text, 64)
	case len(text) <= maxShortDigits:
		p.num.i = shortDecimal(text)
	default:
		p.num.i, err = strconv.ParseInt(text, 10, 64)
	}
	if err != nil {
		p.fail()
	}
}

// maxShortDigits is the most decimal digits shortDecimal reads: any
// number of 18 digits fits an int64.
const maxShortDigits = 18

// shortDecimal is strconv.ParseInt(text, 10, 64) for at most
// maxShortDigits decimal digits.
func shortDecimal(text string) int64 {
	var n int64
	for i := range len(text) {
		n = 10*n + int64(text[i]-'0')
	}
	return n
}

// charClasses are the classes of the bytes the lexer tells apart.
var charClasses = func() (cc [256]uint8) {
	for _, c := range []byte(" \t\n\v\f\r") {
		cc[c] = classSpace
	}
	for c := '0'; c <= '9'; c++ {
		cc[c] = classDigit
	}
	for c := 'a'; c <= 'z'; c++ {
		cc[c], cc[c-'a'+'A'] = classLetter, classLetter
	}
	cc['_'] = classLetter
	return cc
}()

const (
	classSpace = 1 << iota
	classDigit
	classLetter
)

// isExprSpace reports whether c is an ASCII space (unicode.IsSpace).
func isExprSpace(c byte) bool { return charClasses[c] == classSpace }

func isDigit(c byte) bool { return charClasses[c] == classDigit }

func isLetter(c byte) bool { return charClasses[c] == classLetter }

// isLetterOrDigit is isLetter(c) || isDigit(c).
func isLetterOrDigit(c byte) bool { return charClasses[c]&(classLetter|classDigit) != 0 }

// binaryPrecedence is the precedence of a binary operator the parser
// reads, as expr's; ** and ^ associate to the right.
func binaryPrecedence(op string) (int, bool) {
	switch op {
	case "or", "||":
		return 10, true
	case "and", "&&":
		return 15, true
	case "==", "!=", "<", ">", ">=", "<=", "in":
		return inPrecedence, true
	case "+", "-":
		return 30, true
	case "*", "/", "%":
		return 60, true
	case "**", "^":
		return 100, true
	}
	return 0, false
}

// inPrecedence is the precedence of in (and not in).
const inPrecedence = 20

// unaryPrecedence is the precedence of the operand of a unary operator.
func unaryPrecedence(op string) (int, bool) {
	switch op {
	case "not", "!":
		return 50, true
	case "-", "+":
		return 90, true
	}
	return 0, false
}

func isComparison(op string) bool { return op == "<" || op == ">" || op == ">=" || op == "<=" }

// expression is expr's parseExpression: operators of at least
// precedence prec, after a primary expression.
func (p *exprParser) expression(prec int) ast.Node {
	if p.failed {
		return nil
	}
	if p.depth == maxNativeDepth {
		p.fail()
		return nil
	}
	p.depth++
	left := p.operators(prec)
	p.depth--
	return left
}

// operators is expression within the depth limit.
func (p *exprParser) operators(prec int) ast.Node {
	left := p.primary()
	for !p.failed && p.tok.kind == tokOperator {
		opTok := p.tok
		var notTok exprToken
		negate := opTok.value == "not"
		if negate {
			saved := p.tok
			p.next()
			if !p.tok.is(tokOperator, "in") {
				p.fail()
				break
			}
			if inPrecedence < prec {
				p.stash, p.stashd, p.tok = p.tok, true, saved
				break
			}
			notTok, opTok = p.tok, p.tok
		}
		opPrec, ok := binaryPrecedence(opTok.value)
		if !ok || opPrec < prec {
			break
		}
		p.next()
		if isComparison(opTok.value) {
			left = p.comparison(left, opTok, opPrec)
			continue
		}
		rightPrec := opPrec + 1
		if opTok.value == "**" || opTok.value == "^" {
			rightPrec = opPrec
		}
		right := p.expression(rightPrec)
		left = p.binary(opTok, left, right)
		if negate {
			left = p.unary("not", notTok.loc, left)
		}
	}
	return left
}

// comparison is expr's parseComparison for one comparison: a chain of
// them (a < b < c), which expr makes a conjunction, goes to expr.
func (p *exprParser) comparison(left ast.Node, opTok exprToken, prec int) ast.Node {
	right := p.expression(prec + 1)
	if p.tok.kind == tokOperator && isComparison(p.tok.value) {
		p.fail()
	}
	return p.binary(opTok, left, right)
}

// primary is expr's parsePrimary (and parseSecondary): a unary operator
// and its operand, a parenthesized expression, a name, or a literal,
// with the fields that follow.
func (p *exprParser) primary() ast.Node {
	tok := p.tok
	if tok.kind == tokOperator {
		if prec, ok := unaryPrecedence(tok.value); ok {
			p.next()
			operand := p.expression(prec)
			return p.postfix(p.unary(tok.value, tok.loc, operand))
		}
	}
	switch tok.kind {
	case tokOpen:
		p.next()
		inner := p.expression(0)
		if p.tok.kind != tokClose {
			p.fail()
			return nil
		}
		p.next()
		return p.postfix(inner)
	case tokName:
		p.next()
		switch tok.value {
		case "true", "false":
			n := p.bools.new()
			n.Value = tok.value == "true"
			p.created(n, tok.loc)
			return n
		}
		if p.tok.kind == tokOpen {
			p.fail() // a call
			return nil
		}
		n := p.idents.new()
		n.Value = tok.value
		p.created(n, tok.loc)
		return p.postfix(n)
	case tokNumber:
		num := p.num // the lexer parsed it
		p.next()
		if !num.isFloat {
			n := p.ints.new()
			n.Value = int(num.i)
			p.created(n, tok.loc)
			return n
		}
		n := p.floats.new()
		n.Value = num.f
		p.created(n, tok.loc)
		return n
	case tokString:
		p.next()
		n := p.strs.new()
		n.Value = tok.value
		p.created(n, tok.loc)
		return p.postfix(n)
	}
	p.fail()
	return nil
}

// postfix is expr's parsePostfixExpression for fields by name: a method
// call, an index, a slice or an optional field goes to expr.
func (p *exprParser) postfix(node ast.Node) ast.Node {
	for !p.failed && p.tok.is(tokOperator, ".") {
		p.next()
		prop := p.tok
		if prop.kind != tokName {
			p.fail()
			return nil
		}
		p.next()
		s := p.strs.new()
		s.Value = prop.value
		p.created(s, prop.loc)
		m := p.members.new()
		m.Node, m.Property = node, s
		p.created(m, prop.loc)
		if p.tok.kind == tokOpen {
			p.fail() // a method call
			return nil
		}
		node = m
	}
	return node
}

func (p *exprParser) unary(op string, loc file.Location, operand ast.Node) ast.Node {
	n := p.unaries.new()
	n.Operator, n.Node = op, operand
	p.created(n, loc)
	return n
}

func (p *exprParser) binary(tok exprToken, left, right ast.Node) ast.Node {
	n := p.binarys.new()
	n.Operator, n.Left, n.Right = tok.value, left, right
	p.created(n, tok.loc)
	return n
}
