package templates

import (
	"fmt"
	"strconv"
	"text/template/parse"
)

// rewrite makes a parsed template pay for what it does, by adding calls to
// its execution's budget (in place: give it a copy):
//
//   - every list of nodes (a template's body, the branches of {{if}},
//     {{range}} and {{with}}) begins by spending a step, and one for each
//     node in it, so a loop pays for every iteration, empty or not; a
//     template's own list also counts how deep templates have called one
//     another;
//   - every value handed to a command, or from one command to the next in
//     a pipeline, every value a function or method makes, and every value
//     written out, is charged (a step, and one for every bytesPerStep bytes
//     of text), so neither comparing, building nor escaping long text is
//     free.
//
// The calls are variable declarations, which print nothing and which
// html/template does not escape. A tree nested more than MaxNesting deep
// is refused.
func rewrite(tree *parse.Tree) error {
	if tree.Root == nil {
		return nil
	}
	r := rewriter{tree: tree}
	if err := r.list(tree.Root, 0, enterFunc); err != nil {
		return err
	}
	tree.Root.Nodes = append(tree.Root.Nodes, r.declare(r.newCommand(tree.Root.Pos, parse.NewIdentifier(leaveFunc))))
	return nil
}

type rewriter struct{ tree *parse.Tree }

// pipeMode is where a pipeline's value goes.
type pipeMode int

const (
	// output: an action's value, written out.
	output pipeMode = iota
	// kept: a variable's, or dot's in a branch or a template called.
	kept
	// argument: a command's argument, in parentheses.
	argument
)

func (r *rewriter) list(l *parse.ListNode, depth int, begin string) error {
	if err := r.nesting(depth); err != nil {
		return err
	}
	for _, n := range l.Nodes {
		if err := r.node(n, depth); err != nil {
			return err
		}
	}
	// The list itself is a step: an empty loop body is not free.
	spend := r.newCommand(l.Pos, parse.NewIdentifier(begin), r.number(l.Pos, len(l.Nodes)+1))
	l.Nodes = append([]parse.Node{r.declare(spend)}, l.Nodes...)
	return nil
}

func (r *rewriter) nesting(depth int) error {
	if depth > MaxNesting {
		return invalid(fmt.Sprintf("template %s: {{if}}, {{range}}, {{with}} and parentheses nest more than %d deep", r.tree.Name, MaxNesting))
	}
	return nil
}

func (r *rewriter) node(n parse.Node, depth int) error {
	switch n := n.(type) {
	case *parse.ActionNode:
		mode := output
		if len(n.Pipe.Decl) > 0 {
			mode = kept
		}
		return r.pipe(n.Pipe, depth, mode)
	case *parse.IfNode:
		return r.branch(&n.BranchNode, depth)
	case *parse.RangeNode:
		return r.branch(&n.BranchNode, depth)
	case *parse.WithNode:
		return r.branch(&n.BranchNode, depth)
	case *parse.TemplateNode:
		if n.Pipe != nil {
			return r.pipe(n.Pipe, depth, kept)
		}
	}
	return nil
}

func (r *rewriter) branch(b *parse.BranchNode, depth int) error {
	if err := r.pipe(b.Pipe, depth, kept); err != nil {
		return err
	}
	if err := r.list(b.List, depth+1, stepFunc); err != nil {
		return err
	}
	if b.ElseList == nil {
		return nil
	}
	// {{else if}} and {{else with}} are a chain, not a nesting.
	elseDepth := depth + 1
	if len(b.ElseList.Nodes) == 1 {
		switch b.ElseList.Nodes[0].(type) {
		case *parse.IfNode, *parse.WithNode:
			elseDepth = depth
		}
	}
	return r.list(b.ElseList, elseDepth, stepFunc)
}

// pipe charges what p's commands are handed and what they make, and what
// p gives, unless that is a variable's or dot's value, charged where it is
// used.
func (r *rewriter) pipe(p *parse.PipeNode, depth int, mode pipeMode) error {
	if err := r.nesting(depth); err != nil {
		return err
	}
	cmds := make([]*parse.CommandNode, 0, 2*len(p.Cmds))
	for i, cmd := range p.Cmds {
		if err := r.args(cmd, depth); err != nil {
			return err
		}
		cmds = append(cmds, cmd)
		if i < len(p.Cmds)-1 || charged(cmd, mode) {
			cmds = append(cmds, r.newCommand(cmd.Pos, parse.NewIdentifier(chargeFunc)))
		}
	}
	p.Cmds = cmds
	return nil
}

// charged reports whether the value of a pipeline's last command, cmd, is
// charged. Written out, it is — what html/template does to it costs in
// proportion — unless it is html or urlquery, which html/template wants
// last, and which cost a bounded multiple of what they were handed,
// charged already. Kept, it is when a function or method made it.
func charged(cmd *parse.CommandNode, mode pipeMode) bool {
	switch mode {
	case output:
		return !lastEscaper(cmd)
	case kept:
		return makesValue(cmd)
	}
	return true
}

// args charges cmd's arguments (not its operand: a function's name, or
// the field or variable it calls or gives).
func (r *rewriter) args(cmd *parse.CommandNode, depth int) error {
	for i, arg := range cmd.Args {
		charged, err := r.arg(arg, depth, i > 0)
		if err != nil {
			return err
		}
		cmd.Args[i] = charged
	}
	return nil
}

// arg rewrites the pipelines inside n and, if charge, charges its value.
func (r *rewriter) arg(n parse.Node, depth int, charge bool) (parse.Node, error) {
	var inner *parse.PipeNode
	switch n := n.(type) {
	case *parse.PipeNode:
		inner = n
	case *parse.ChainNode:
		inner, _ = n.Node.(*parse.PipeNode)
	case *parse.FieldNode, *parse.VariableNode, *parse.DotNode, *parse.IdentifierNode:
	default:
		return n, nil // a literal: its cost is its source's
	}
	if inner != nil {
		if err := r.pipe(inner, depth+1, argument); err != nil {
			return nil, err
		}
	}
	if _, pipeline := n.(*parse.PipeNode); pipeline || !charge { // a pipeline argument charges its own value
		return n, nil
	}
	return &parse.PipeNode{NodeType: parse.NodePipe, Pos: n.Position(),
		Cmds: []*parse.CommandNode{r.newCommand(n.Position(), n), r.newCommand(n.Position(), parse.NewIdentifier(chargeFunc))}}, nil
}

// makesValue reports whether cmd calls a function or a method with
// arguments: what it gives may be longer than anything before.
func makesValue(cmd *parse.CommandNode) bool {
	_, function := cmd.Args[0].(*parse.IdentifierNode)
	return function || len(cmd.Args) > 1
}

func lastEscaper(cmd *parse.CommandNode) bool {
	id, ok := cmd.Args[0].(*parse.IdentifierNode)
	return ok && (id.Ident == "html" || id.Ident == "urlquery")
}

// declare is an action that assigns cmd's value to a variable: it prints
// nothing, and html/template leaves it as it is.
func (r *rewriter) declare(cmd *parse.CommandNode) *parse.ActionNode {
	v := &parse.VariableNode{NodeType: parse.NodeVariable, Pos: cmd.Pos, Ident: []string{"$herald"}}
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: cmd.Pos,
		Pipe: &parse.PipeNode{NodeType: parse.NodePipe, Pos: cmd.Pos, Decl: []*parse.VariableNode{v}, Cmds: []*parse.CommandNode{cmd}}}
}

func (r *rewriter) newCommand(pos parse.Pos, args ...parse.Node) *parse.CommandNode {
	for _, a := range args {
		if id, ok := a.(*parse.IdentifierNode); ok {
			id.SetTree(r.tree).SetPos(pos)
		}
	}
	return &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: args}
}

func (r *rewriter) number(pos parse.Pos, n int) *parse.NumberNode {
	return &parse.NumberNode{NodeType: parse.NodeNumber, Pos: pos, IsInt: true, Int64: int64(n), Text: strconv.Itoa(n)}
}
