package configdoc

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// source reads the packages of one module from disk as the compiler sees
// them (build constraints applied, tests left out), without type-checking:
// enough to find a named type's declaration and what an import name stands
// for.
type source struct {
	root   string // the module's directory
	module string // its module path
	fset   *token.FileSet
	pkgs   map[string]*pkg // by import path
}

// pkg is one parsed package.
type pkg struct {
	path  string
	name  string
	files []*ast.File
	types map[string]typeDecl
}

// typeDecl is a named type's declaration, with the file it is in, whose
// imports its type expression is read against.
type typeDecl struct {
	name string
	spec *ast.TypeSpec
	doc  string
	file *ast.File
	pkg  *pkg
}

// openModule finds the module dir is in (or dir itself).
func openModule(dir string) (*source, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("finding the module: %w", err)
	}
	for {
		module, err := modulePath(filepath.Join(root, "go.mod"))
		if err == nil {
			return &source{root: root, module: module, fset: token.NewFileSet(), pkgs: map[string]*pkg{}}, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		parent := filepath.Dir(root)
		if parent == root {
			return nil, fmt.Errorf("no go.mod in %s or above", dir)
		}
		root = parent
	}
}

// modulePath reads the module line of a go.mod file.
func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(lines.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	if err := lines.Err(); err != nil {
		return "", fmt.Errorf("reading %s: %w", gomod, err)
	}
	return "", fmt.Errorf("%s has no module line", gomod)
}

// inModule says whether importPath is one of the module's packages.
func (s *source) inModule(importPath string) bool {
	return importPath == s.module || strings.HasPrefix(importPath, s.module+"/")
}

// load parses the module's package importPath, once.
func (s *source) load(importPath string) (*pkg, error) {
	if p, ok := s.pkgs[importPath]; ok {
		return p, nil
	}
	if !s.inModule(importPath) {
		return nil, fmt.Errorf("%s is not in module %s", importPath, s.module)
	}
	dir := filepath.Join(s.root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(importPath, s.module), "/")))
	bp, err := build.Default.ImportDir(dir, 0)
	if err != nil {
		return nil, fmt.Errorf("reading package %s: %w", importPath, err)
	}
	p := &pkg{path: importPath, name: bp.Name, types: map[string]typeDecl{}}
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(s.fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", importPath, err)
		}
		p.files = append(p.files, f)
		p.addTypes(f)
	}
	s.pkgs[importPath] = p
	return p, nil
}

// addTypes records the named types f declares.
func (p *pkg) addTypes(f *ast.File) {
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.TYPE {
			continue
		}
		for _, spec := range gen.Specs {
			ts := spec.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil && len(gen.Specs) == 1 {
				doc = gen.Doc
			}
			p.types[ts.Name.Name] = typeDecl{name: ts.Name.Name, spec: ts, doc: doc.Text(), file: f, pkg: p}
		}
	}
}

// lookup finds the type name declared in package importPath.
func (s *source) lookup(importPath, name string) (typeDecl, error) {
	p, err := s.load(importPath)
	if err != nil {
		return typeDecl{}, err
	}
	t, ok := p.types[name]
	if !ok {
		return typeDecl{}, fmt.Errorf("package %s declares no type %s", importPath, name)
	}
	return t, nil
}

// importPath is the package the name local stands for in file f.
func (s *source) importPath(f *ast.File, local string) (string, error) {
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return "", fmt.Errorf("import %s: %w", imp.Path.Value, err)
		}
		name, err := s.packageName(path)
		if err != nil {
			return "", err
		}
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if name == local {
			return path, nil
		}
	}
	return "", fmt.Errorf("%s: no import named %s", s.fset.Position(f.Package).Filename, local)
}

// packageName is the name a package is imported by when the import does not
// rename it: its own, for the module's packages; for others, the last
// element of the path without a major version (config files import few).
func (s *source) packageName(path string) (string, error) {
	if s.inModule(path) {
		p, err := s.load(path)
		if err != nil {
			return "", err
		}
		return p.name, nil
	}
	elems := strings.Split(path, "/")
	last := elems[len(elems)-1]
	if len(elems) > 1 && len(last) > 1 && last[0] == 'v' && strings.Trim(last[1:], "0123456789") == "" {
		last = elems[len(elems)-2]
	}
	return last, nil
}
