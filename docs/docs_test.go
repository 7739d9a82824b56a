// Package docs holds Herald's guides. Its test runs every shell block of
// README.md and of the guides as written, against one `herald dev`, so a
// command a reader pastes is a command that works.
package docs_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
)

// block is one fenced block of a page.
type block struct {
	page, lang, notRun string
	line               int
	text               string
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.page, b.line) }

var (
	fence  = regexp.MustCompile("^(\\s*)```(\\S*)\\s*$")
	notRun = regexp.MustCompile(`^<!--\s*not run:\s*(.+?)\s*-->$`)
	// The command that starts a server and does not return — the test runs
	// it once, before every block, instead — and the test command, of which
	// this test is a part.
	devLine = regexp.MustCompile(`^\s*((go run \./services/herald|herald) dev|go test)(\s|$)`)
)

// readBlocks returns a page's fenced blocks in page order. A fence without
// a language is an error: a shell command in it would escape the test.
func readBlocks(t *testing.T, root, page string) []block {
	t.Helper()
	f, err := os.Open(filepath.Join(root, page))
	require.NoError(t, err)
	defer f.Close()
	var (
		blocks  []block
		cur     *block
		indent  string
		lastTxt string
		n       int
	)
	scan := bufio.NewScanner(f)
	scan.Buffer(make([]byte, 1<<20), 1<<20)
	for scan.Scan() {
		n++
		line := scan.Text()
		m := fence.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil:
			require.NotEmpty(t, m[2], "%s:%d: a fence without a language (sh, text, yaml, go…)", page, n)
			cur = &block{page: page, lang: m[2], line: n}
			indent = m[1]
			if r := notRun.FindStringSubmatch(lastTxt); r != nil {
				cur.notRun = r[1]
			}
		case cur != nil && m != nil && m[2] == "":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += strings.TrimPrefix(line, indent) + "\n"
		}
		if strings.TrimSpace(line) != "" {
			lastTxt = strings.TrimSpace(line)
		}
	}
	require.NoError(t, scan.Err())
	require.Nil(t, cur, "%s: a fence is never closed", page)
	return blocks
}

// pages are README.md and the guides, README first. BENCHMARKS.md's blocks
// are measurement recipes of minutes each, on a stated machine, and
// MUTATIONS.md lists commands inline: neither is a guide to run.
func pages(t *testing.T, root string) []string {
	t.Helper()
	guides, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	out := []string{"README.md"}
	for _, g := range guides {
		if name := filepath.Base(g); name != "BENCHMARKS.md" && name != "MUTATIONS.md" {
			out = append(out, filepath.Join("docs", name))
		}
	}
	return out
}

// Every ```sh block of README.md and the guides runs as written, with
// bash -e, in page order, from the root of a working copy beside one
// `herald dev`; `herald` on the PATH is the binary built from this tree.
// Only blocks after `<!-- not run: reason -->` are left out, and only in
// docs/deploying.md (they need a cluster, helm or kubectl).
func TestEveryShellBlockRunsAgainstHeraldDev(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	var all []block
	for _, p := range pages(t, root) {
		all = append(all, readBlocks(t, root, p)...)
	}
	tools := toolPath(t)
	work := copyTree(t, root)
	bin := buildHerald(t, root)
	dev := startDev(t, work, bin, tools)

	var ran, server, skipped int
	for _, b := range all {
		if b.lang != "sh" {
			continue
		}
		if b.notRun != "" {
			require.Equal(t, filepath.Join("docs", "deploying.md"), b.page, "%s: only docs/deploying.md may leave a block unrun", b)
			t.Logf("%s: not run: %s", b, b.notRun)
			skipped++
			continue
		}
		script := withoutDev(b.text)
		if strings.TrimSpace(stripComments(script)) == "" {
			server++ // the two commands: herald dev, and the tests
			continue
		}
		dev.run(t, b, script)
		ran++
	}
	t.Logf("%d shell blocks ran, %d were the two commands (herald dev, the tests), %d not run", ran, server, skipped)
	require.Positive(t, ran)
	require.LessOrEqual(t, skipped, 12, "keep the blocks left unrun few")
}

// withoutDev drops a block's lines of the two commands: the test's own dev
// is already running, as the reader's is in their first terminal, and the
// tests are what runs this one.
func withoutDev(text string) string {
	var kept []string
	for _, line := range strings.Split(text, "\n") {
		if !devLine.MatchString(line) {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}

func stripComments(text string) string {
	var kept []string
	for _, line := range strings.Split(text, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

// toolPath is a PATH holding the nats CLI, which the guides use: on the
// PATH already, or where `go install` put it. In CI .ci/run installs it.
func toolPath(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PATH")
	if _, err := exec.LookPath("nats"); err == nil {
		return path
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	require.NoError(t, err)
	for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
		if _, err := os.Stat(filepath.Join(dir, "bin", "nats")); err == nil {
			return filepath.Join(dir, "bin") + string(os.PathListSeparator) + path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("the nats CLI is missing: go install github.com/nats-io/natscli/nats@v0.5.0")
	}
	t.Skip("the nats CLI is not installed (go install github.com/nats-io/natscli/nats@v0.5.0)")
	return ""
}

// copyTree copies the repository, without .git and without the reader's
// own .herald, so the blocks' dev data and files stay in the test's dir.
func copyTree(t *testing.T, root string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (rel == ".git" || rel == ".herald") {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, target)
		}
		return nil
	})
	require.NoError(t, err)
	return dst
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// buildHerald builds the binary the guides call `herald` into a directory
// of its own, to go first on the blocks' PATH.
func buildHerald(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "herald"), "./services/herald")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building herald: %s", out)
	return dir
}

// devServer is the `herald dev` every block runs beside.
type devServer struct {
	work, path     string
	nats, ops, api string
	hook           string // the webhook sink's address, when this dev has one
	env            []string
	state          string
	statePage      string
	log            *heraldtest.Buffer
}

// startDev runs `herald dev` in the working copy on ports of its own: the
// ones the guides name (4222, 8080, 8081) may be a developer's own dev's.
// The ports are picked free, then bound by the dev a few seconds later:
// on a busy machine another test may take one meanwhile, and the dev is
// started again on others.
func startDev(t *testing.T, work, bin, tools string) *devServer {
	t.Helper()
	for try := 1; ; try++ {
		d, ok := tryDev(t, work, bin, tools)
		if ok {
			return d
		}
		require.Less(t, try, 3, "herald dev found its ports taken three times: %s", d.log)
		t.Logf("herald dev found a port taken; starting it again on others")
	}
}

// tryDev starts `herald dev` and waits until it is ready; false when it
// stopped because a port it was given had been taken.
func tryDev(t *testing.T, work, bin, tools string) (*devServer, bool) {
	t.Helper()
	d := &devServer{work: work, path: bin + string(os.PathListSeparator) + tools, log: &heraldtest.Buffer{}}
	d.nats, d.ops, d.api = freeAddr(t), freeAddr(t), freeAddr(t)
	d.env = blockEnv(t, d)
	ctx, cancel := context.WithCancel(context.Background())
	args := []string{"dev", "--nats-listen", d.nats, "--http-listen", d.ops, "--api-listen", d.api, "--shutdown-timeout", "10s"}
	if hasFlag(t, bin, "--hook-listen") {
		d.hook = freeAddr(t)
		args = append(args, "--hook-listen", d.hook)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "herald"), args...)
	cmd.Dir = work
	// Keys of their own on a Redis other tests share: the guides' tenant
	// and orders are the e2e tests' too.
	config := filepath.Join(t.TempDir(), "dev.yaml")
	require.NoError(t, os.WriteFile(config, []byte("redis:\n  prefix: \""+heraldtest.Prefix()+"\"\n"), 0o600))
	cmd.Env = []string{"REDIS_URL=" + heraldtest.RedisURL(t), "HERALD_CONFIG=" + config}
	for _, kv := range d.env {
		if !strings.HasPrefix(kv, "HERALD_CONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = d.log, d.log
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 20 * time.Second
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("herald dev's output:\n%s", d.log)
		}
	})
	client := heraldtest.HTTPClient(t)
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			require.Contains(t, d.log.String(), "address already in use", "herald dev stopped before it was ready")
			return d, false
		default:
		}
		if resp, err := client.Get("http://" + d.ops + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d, true
			}
		}
	}
	require.FailNow(t, "herald dev is not ready", "%s", d.log)
	return d, false
}

// hasFlag says whether `herald dev` takes flag.
func hasFlag(t *testing.T, bin, flag string) bool {
	t.Helper()
	out, err := exec.Command(filepath.Join(bin, "herald"), "dev", "--help").CombinedOutput()
	require.NoError(t, err, "herald dev --help: %s", out)
	return strings.Contains(string(out), flag+" ")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// blockEnv is the blocks' environment: the test's, less what would point
// Herald elsewhere, with herald first on the PATH. The guides' commands
// reach NATS on its default address; here the dev's is the default of the
// herald CLI (a configuration file) and of the nats CLI (a selected
// context) — not NATS_URL, which would make `herald bench` use the dev's
// server instead of its own.
func blockEnv(t *testing.T, d *devServer) []string {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "herald.yaml")
	require.NoError(t, os.WriteFile(config, []byte("nats:\n  url: nats://"+d.nats+"\n"), 0o600))
	contexts := filepath.Join(dir, "xdg", "nats", "context")
	require.NoError(t, os.MkdirAll(contexts, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(contexts, "dev.json"), []byte(`{"url": "nats://`+d.nats+`"}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "xdg", "nats", "context.txt"), []byte("dev"), 0o600))
	var env []string
	drop := []string{"PATH", "NATS_URL", "REDIS_URL", "HERALD_CONFIG", "HISTORY_URL", "OUTBOX_URL", "HERALD_MASTER_KEY",
		"XDG_CONFIG_HOME", "NATS_CONTEXT", "KEY", "ADMIN"}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, name) {
			env = append(env, kv)
		}
	}
	return append(env, "PATH="+d.path, "HERALD_CONFIG="+config, "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg"))
}

// addresses maps the addresses the guides write to the test dev's.
func (d *devServer) addresses(script string) string {
	for _, host := range []string{"127.0.0.1", "localhost"} {
		script = strings.ReplaceAll(script, host+":4222", d.nats)
		script = strings.ReplaceAll(script, host+":8080", d.ops)
		script = strings.ReplaceAll(script, host+":8081", d.api)
		if d.hook != "" {
			script = strings.ReplaceAll(script, host+":8082", d.hook)
		}
	}
	return script
}

// run runs one block with bash -e in the working copy. The variables a page's
// earlier blocks set are set (a reader runs a page's blocks in one terminal);
// each page starts afresh. A block that fails is tried again until its
// deadline, as a reader would who reads the output before pasting the next:
// what Herald does after a command (an email written, a dead letter kept)
// takes a moment.
func (d *devServer) run(t *testing.T, b block, script string) {
	t.Helper()
	if d.statePage != b.page {
		d.statePage = b.page
		d.state = filepath.Join(t.TempDir(), "state.sh")
		require.NoError(t, os.WriteFile(d.state, nil, 0o600))
	}
	full := "set -e\n" + failingCurl + ". " + d.state + "\n" + d.addresses(script) + "\nexport -p > " + d.state + ".new\n"
	deadline := time.Now().Add(30 * time.Second)
	for attempt := 1; ; attempt++ {
		out, err := d.bash(full)
		if err == nil {
			require.NoError(t, d.keepState())
			t.Logf("%s ran (try %d)", b, attempt)
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s failed (%v) after %d tries:\n--- block ---\n%s--- output ---\n%s", b, err, attempt, script, out)
			return
		}
		time.Sleep(time.Second)
	}
}

// failingCurl makes an HTTP error fail its block, as curl alone does not:
// a guide's request that Herald refuses (a 415 for a missing Content-Type)
// is a broken example. A curl that writes out the status (-w) is showing
// the reader an error on purpose.
const failingCurl = `curl() {
  case " $* " in
    *" -w "*|*" --write-out "*) command curl "$@" ;;
    *) command curl --fail-with-body "$@" ;;
  esac
}
`

func (d *devServer) bash(script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", script)
	cmd.Dir = d.work
	cmd.Env = d.env
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// keepState keeps the variables a block exported, beside those of the
// environment every block starts with, for the page's next blocks.
func (d *devServer) keepState() error {
	raw, err := os.ReadFile(d.state + ".new")
	if err != nil {
		return err
	}
	var kept []string
	for _, line := range strings.Split(string(raw), "\n") {
		name := exportedName(line)
		if name == "" || name == "OLDPWD" || name == "PWD" || name == "SHLVL" || name == "_" {
			continue
		}
		if slices.ContainsFunc(d.env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") }) {
			continue
		}
		kept = append(kept, line)
	}
	return os.WriteFile(d.state, []byte(strings.Join(kept, "\n")+"\n"), 0o600)
}

var exported = regexp.MustCompile(`^declare -x ([A-Za-z_][A-Za-z0-9_]*)=`)

func exportedName(line string) string {
	if m := exported.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

var (
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile("^#{1,6} +(.+?) *$")
)

// Every relative link of README.md, the guides and the chart's README names
// a file that exists and, after #, a heading of that page: pages moved, and
// sections with them.
func TestEveryLinkResolves(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	pages := []string{"README.md", filepath.Join("helm", "herald", "README.md"), filepath.Join("docs", "console", "README.md")}
	guides, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	for _, g := range guides {
		pages = append(pages, filepath.Join("docs", filepath.Base(g)))
	}
	for _, page := range pages {
		raw, err := os.ReadFile(filepath.Join(root, page))
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(withoutFences(string(raw)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := filepath.Join(root, page)
			if file != "" {
				path = filepath.Join(filepath.Dir(path), file)
			}
			_, err := os.Stat(path)
			require.NoError(t, err, "%s links to %s, which does not exist", page, target)
			if anchor != "" {
				require.Contains(t, anchors(t, path), anchor, "%s links to %s: no such heading", page, target)
			}
		}
	}
}

// withoutFences is a page without its fenced blocks, where ]( is code.
func withoutFences(page string) string {
	var kept []string
	inside := false
	for _, line := range strings.Split(page, "\n") {
		if fence.MatchString(line) {
			inside = !inside
			continue
		}
		if !inside {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}

// anchors are the ids GitHub gives a page's headings: lower case, spaces
// as hyphens, punctuation dropped.
func anchors(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var ids []string
	for _, line := range strings.Split(withoutFences(string(raw)), "\n") {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var id strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				id.WriteRune(r)
			case r == ' ':
				id.WriteRune('-')
			}
		}
		ids = append(ids, id.String())
	}
	return ids
}

// The README is read in five minutes, and its first screen holds the two
// commands: the rest is in the guides.
func TestTheREADMEIsShortAndStartsWithTheTwoCommands(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "README.md"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	require.LessOrEqual(t, len(lines), 250, "README.md has %d lines: move detail to a guide under docs/", len(lines))
	firstScreen := strings.Join(lines[:min(len(lines), 30)], "\n")
	for _, command := range []string{"go run ./services/herald dev", "go test ./..."} {
		require.Contains(t, firstScreen, command, "the first screen of README.md shows %q", command)
	}
}
