package configdoc

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/token"
	"strconv"
	"strings"
)

// override is what sets a key besides the file.
type override struct{ env, flag string }

// overrides reads the function fn of package importPath — main's
// loadConfig — for the keys it sets from the environment and from flags,
// by Go path (NATS.URL): `cfg.X.Y = …os.Getenv("VAR")…` and
// `if f := cmd.Flags().Lookup("flag"); … { cfg.X.Y = … }`.
func (s *source) overrides(importPath, fn, configVar string) (map[string]override, error) {
	body, err := s.funcBody(importPath, fn)
	if err != nil {
		return nil, err
	}
	found := map[string]override{}
	var visit func(stmts []ast.Stmt, flag string)
	visit = func(stmts []ast.Stmt, flag string) {
		for _, stmt := range stmts {
			switch st := stmt.(type) {
			case *ast.AssignStmt:
				for i, lhs := range st.Lhs {
					path, ok := selectorPath(lhs, configVar)
					if !ok || i >= len(st.Rhs) {
						continue
					}
					o := found[path]
					o.env = cmp.Or(o.env, stringArgOf(st.Rhs[i], "Getenv"))
					o.flag = cmp.Or(o.flag, flag)
					if o != (override{}) {
						found[path] = o
					}
				}
			case *ast.IfStmt:
				visit(st.Body.List, cmp.Or(stringArgOf(st.Init, "Lookup"), flag))
			case *ast.BlockStmt:
				visit(st.List, flag)
			}
		}
	}
	visit(body.List, "")
	return found, nil
}

// funcBody finds the body of function fn in package importPath.
func (s *source) funcBody(importPath, fn string) (*ast.BlockStmt, error) {
	p, err := s.load(importPath)
	if err != nil {
		return nil, err
	}
	for _, f := range p.files {
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == fn {
				return fd.Body, nil
			}
		}
	}
	return nil, fmt.Errorf("package %s has no function %s", importPath, fn)
}

// selectorPath is the Go path of a selector rooted at variable root:
// cfg.NATS.URL is NATS.URL.
func selectorPath(e ast.Expr, root string) (string, bool) {
	var names []string
	for {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			names = append([]string{x.Sel.Name}, names...)
			e = x.X
			continue
		case *ast.Ident:
			return strings.Join(names, "."), x.Name == root && len(names) > 0
		}
		return "", false
	}
}

// stringArgOf is the string literal given to a call of a function or method
// named fn within node n, or "".
func stringArgOf(n ast.Node, fn string) string {
	if n == nil {
		return ""
	}
	var found string
	ast.Inspect(n, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found != "" || len(call.Args) != 1 {
			return found == ""
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == fn {
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				found, _ = strconv.Unquote(lit.Value)
			}
		}
		return found == ""
	})
	return found
}
