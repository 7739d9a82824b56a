package configdoc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Spec says where a module's configuration is declared.
type Spec struct {
	// Package holds the top-level config struct (a directory of the
	// module), and Type names it.
	Package, Type string
	// Main is the package whose function Overrides sets keys from the
	// environment and flags on a variable named Var.
	Main, Overrides, Var string
	// Page is the file written, in the module's directory.
	File string
}

// Herald is where Herald's configuration is declared.
var Herald = Spec{
	Package: "services/herald/app", Type: "Config",
	Main: "services/herald", Overrides: "loadConfig", Var: "cfg",
	File: "docs/CONFIGURATION.md",
}

// RegenerateCommand writes docs/CONFIGURATION.md again.
const RegenerateCommand = "go generate ./services/herald/internal/configdoc/"

// Keys reads every key of the configuration spec declares, in the module
// dir is in. An undocumented key is an error (ErrUndocumented) naming it.
func (spec Spec) Keys(dir string) ([]Key, error) {
	src, err := openModule(dir)
	if err != nil {
		return nil, err
	}
	keys, err := src.walkType(src.module+"/"+spec.Package, spec.Type)
	if err != nil {
		return nil, err
	}
	over, err := src.overrides(src.module+"/"+spec.Main, spec.Overrides, spec.Var)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		if o, ok := over[k.goPath]; ok {
			keys[i].Env, keys[i].Flag = o.env, o.flag
			delete(over, k.goPath)
		}
	}
	for path := range over {
		return nil, fmt.Errorf("%s sets %s.%s, which is no key of the file", spec.Overrides, spec.Var, path)
	}
	return keys, nil
}

// Page is the configuration reference of the module dir is in.
func (spec Spec) Page(dir string) ([]byte, error) {
	keys, err := spec.Keys(dir)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(intro)
	writeIndex(&b, keys)
	for _, k := range keys {
		switch {
		case strings.Contains(k.Path, "."):
			writeKey(&b, k)
		case k.Type == "object":
			fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", k.Path, markdown(k.Doc))
		default:
			fmt.Fprintf(&b, "\n## %s\n\n", k.Path)
			writeKey(&b, k)
		}
	}
	return b.Bytes(), nil
}

// WritePage writes Herald's configuration reference into the module dir
// is in.
func WritePage(dir string) error {
	page, err := Herald.Page(dir)
	if err != nil {
		return err
	}
	src, err := openModule(dir)
	if err != nil {
		return err
	}
	path := filepath.Join(src.root, filepath.FromSlash(Herald.File))
	if err := os.WriteFile(path, page, 0o644); err != nil {
		return fmt.Errorf("writing the configuration reference: %w", err)
	}
	return nil
}

// Example is the page's first example: a file `herald dev` starts with.
const Example = `log:
  level: debug
email:
  from: "Acme Orders <orders@acme.example>"
  max_tries: 5
router:
  max_recipients: 50
documents:
  link_ttl: 72h
`

const intro = "# Configuration reference\n\n" +
	"<!-- Generated from the config structs' doc comments by `" + RegenerateCommand + "`; do not edit. -->\n\n" +
	"Herald reads one YAML file, the same for `herald dev` and `herald run`. Save this as `herald.yaml`:\n\n" +
	"```yaml\n" + Example + "```\n\n" +
	"and start the whole pipeline with it (`herald` is `go run ./services/herald` or the binary):\n\n" +
	"```sh\nherald dev --config herald.yaml\n```\n\n" +
	"Configuration is read once, at start-up, later winning: the file (`--config FILE`, or `HERALD_CONFIG`), " +
	"then the environment variables and flags named below. A key the file misspells stops start-up, naming its line; " +
	"an invalid value stops it naming the key. Secrets are never written in the file: keys ending in `_env` or `_file` " +
	"name the environment variable or file that holds one. A key left out takes its default.\n\n" +
	"Every key below is a field of the configuration structs, described by its doc comment: a test fails when a field " +
	"has none, or when this page differs from what `" + RegenerateCommand + "` writes. " +
	"`<name>` stands for a name of your choosing, `[]` for each element of a list.\n"

// writeIndex lists the sections.
func writeIndex(b *bytes.Buffer, keys []Key) {
	b.WriteString("\n## Sections\n\n")
	for _, k := range keys {
		if !strings.Contains(k.Path, ".") {
			fmt.Fprintf(b, "- [`%s`](#%s): %s\n", k.Path, k.Path, markdown(firstSentence(k.Doc)))
		}
	}
}

// writeKey writes one key: its path, type, default and override, then its
// doc comment.
func writeKey(b *bytes.Buffer, k Key) {
	facts := []string{k.Type}
	if k.Default != "" {
		facts = append(facts, "default "+markdown(k.Default))
	}
	if k.Env != "" {
		facts = append(facts, "env `"+k.Env+"`")
	}
	if k.Flag != "" {
		facts = append(facts, "flag `--"+k.Flag+"`")
	}
	doc := markdown(k.Doc)
	if k.SameAs != "" {
		doc += " Its keys are those of `" + k.SameAs + "`."
	}
	fmt.Fprintf(b, "- `%s` — %s\\\n  %s\n", k.Path, strings.Join(facts, " · "), doc)
}

// defaultPattern finds a doc comment's default: "Defaults to X." (or
// "…; …"), X ending where the sentence does.
var defaultPattern = regexp.MustCompile(`Defaults to (.+?)(?:[.;](?:\s|$)|$)`)

// defaultOf is the default a doc comment states, or "".
func defaultOf(doc string) string {
	m := defaultPattern.FindStringSubmatch(doc)
	if m == nil {
		return ""
	}
	return m[1]
}

// withDefault is doc saying def is the default instead of what it said.
func withDefault(doc, def string) string {
	m := defaultPattern.FindStringSubmatchIndex(doc)
	if m == nil {
		return doc + " Defaults to " + def + "."
	}
	return doc[:m[2]] + def + doc[m[3]:]
}

// firstSentence is a doc comment's first sentence.
func firstSentence(doc string) string {
	if i := strings.Index(doc, ". "); i >= 0 {
		return doc[:i+1]
	}
	return doc
}

// markdown escapes what Markdown would take for HTML outside code spans.
func markdown(s string) string {
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = strings.NewReplacer("<", "&lt;", ">", "&gt;", "*", `\*`).Replace(parts[i])
	}
	return strings.Join(parts, "`")
}
