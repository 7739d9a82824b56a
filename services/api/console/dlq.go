package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/services/dlq"
)

// dlqPageSize is how many entries the DLQ page lists at once.
const dlqPageSize = 200

// dlqView is the DLQ page: the filter, a page of entries, and how many the
// filter selects in all.
type dlqView struct {
	Filter  dlqFilter
	Entries []dlq.Entry
	Total   int
	// Query is the filter as a query string, for links back to it.
	Query string
}

// dlqFilter is the filter as the form has it.
type dlqFilter struct {
	Stream, Consumer, Tenant, Reason, Older string
}

// readDLQFilter reads the form's filter (from a query or a posted form).
func readDLQFilter(v url.Values) (dlqFilter, dlq.Filter, error) {
	ff := dlqFilter{Stream: strings.TrimSpace(v.Get("stream")), Consumer: strings.TrimSpace(v.Get("consumer")),
		Tenant: strings.TrimSpace(v.Get("tenant")), Reason: strings.TrimSpace(v.Get("reason")), Older: strings.TrimSpace(v.Get("older"))}
	f := dlq.Filter{Stream: ff.Stream, Consumer: ff.Consumer, Tenant: ff.Tenant, Reason: ff.Reason}
	if ff.Consumer != "" && ff.Stream == "" {
		return ff, f, errors.New("A consumer is named within its stream: give the stream too.")
	}
	if ff.Older != "" {
		d, err := time.ParseDuration(ff.Older)
		if err != nil || d < 0 {
			return ff, f, fmt.Errorf("Older than %q is not a duration such as 30m, 6h or 72h.", ff.Older)
		}
		f.OlderThan = d
	}
	return ff, f, nil
}

func (ff dlqFilter) query() string {
	v := url.Values{}
	for k, s := range map[string]string{"stream": ff.Stream, "consumer": ff.Consumer, "tenant": ff.Tenant, "reason": ff.Reason, "older": ff.Older} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v.Encode()
}

func (c *Console) dlqPage(w http.ResponseWriter, r *http.Request, ses *session) {
	ff, f, err := readDLQFilter(r.URL.Query())
	v := dlqView{Filter: ff, Query: ff.query()}
	if err != nil {
		c.render(w, http.StatusBadRequest, "dlq.html", view{Title: "Dead letters", Nav: "dlq", Session: ses, Notice: err.Error(), Data: v})
		return
	}
	v.Entries, v.Total, err = c.dlq.List(r.Context(), f, dlqPageSize)
	if err != nil {
		c.cfg.Logger.Warn("console: listing the DLQ", "error", err)
		c.fail(w, r, ses, http.StatusServiceUnavailable, "The DLQ cannot be read right now.")
		return
	}
	c.render(w, http.StatusOK, "dlq.html", view{Title: "Dead letters", Nav: "dlq", Session: ses, Notice: r.URL.Query().Get("done"), Data: v})
}

// dlqEntryView is one entry, its payload shown as text.
type dlqEntryView struct {
	Entry dlq.Entry
	// Payload is the original payload, indented when it is JSON, else
	// as text when it is UTF-8; Binary says it is neither (shown as hex).
	Payload string
	Binary  bool
	Headers []header
}

type header struct{ Name, Value string }

func (c *Console) dlqEntryPage(w http.ResponseWriter, r *http.Request, ses *session) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil || seq == 0 {
		c.fail(w, r, ses, http.StatusNotFound, "There is no such dead letter.")
		return
	}
	e, err := c.dlq.Get(r.Context(), seq)
	if errors.Is(err, dlq.ErrNoEntry) {
		c.fail(w, r, ses, http.StatusNotFound, fmt.Sprintf("The DLQ holds no entry %d: purged, or never there.", seq))
		return
	}
	if err != nil {
		c.cfg.Logger.Warn("console: reading a dead letter", "seq", seq, "error", err)
		c.fail(w, r, ses, http.StatusServiceUnavailable, "The DLQ cannot be read right now.")
		return
	}
	data, err := c.dlq.Payload(r.Context(), e)
	if err != nil {
		c.cfg.Logger.Warn("console: reading a dead letter's payload", "seq", seq, "error", err)
		c.fail(w, r, ses, http.StatusServiceUnavailable, "The dead letter's payload cannot be read right now.")
		return
	}
	v := dlqEntryView{Entry: e}
	var indented bytes.Buffer
	switch {
	case json.Indent(&indented, data, "", "  ") == nil:
		v.Payload = indented.String()
	case isText(data):
		v.Payload = string(data)
	default:
		v.Payload, v.Binary = fmt.Sprintf("% x", data), true
	}
	for name, values := range e.Header {
		for _, value := range values {
			v.Headers = append(v.Headers, header{name, value})
		}
	}
	slices.SortFunc(v.Headers, func(a, b header) int { return strings.Compare(a.Name, b.Name) })
	c.render(w, http.StatusOK, "dlq_entry.html", view{Title: fmt.Sprintf("Dead letter %d", seq), Nav: "dlq", Session: ses,
		Notice: r.URL.Query().Get("done"), Data: v})
}

func isText(b []byte) bool {
	return !bytes.ContainsFunc(b, func(r rune) bool { return r == 0xfffd || r < ' ' && r != '\n' && r != '\r' && r != '\t' })
}

// selection is what a redrive or purge acts on: the sequences ticked, or
// every entry the filter selects ("scope=filter").
func (c *Console) selection(r *http.Request) (dlq.Filter, string, error) {
	ff, f, err := readDLQFilter(r.PostForm)
	if err != nil {
		return f, "", err
	}
	if r.PostForm.Get("scope") == "filter" {
		if ff == (dlqFilter{}) {
			return f, "", errors.New("Acting on every entry needs a filter; purge or redrive them all with the CLI (herald dlq … --all).")
		}
		return f, "filter " + ff.query(), nil
	}
	for _, s := range r.PostForm["seq"] {
		seq, err := strconv.ParseUint(s, 10, 64)
		if err != nil || seq == 0 {
			return f, "", fmt.Errorf("%q is not an entry's sequence.", s)
		}
		f.Seqs = append(f.Seqs, seq)
	}
	if len(f.Seqs) == 0 {
		return f, "", errors.New("Tick the entries to act on, or choose every entry the filter selects.")
	}
	return dlq.Filter{Seqs: f.Seqs}, "entries " + strings.Trim(strings.Join(r.PostForm["seq"], ","), ","), nil
}

// dlqRedrive republishes the selected entries to their original subjects;
// the ledger keeps a notification delivered meanwhile from going twice.
func (c *Console) dlqRedrive(w http.ResponseWriter, r *http.Request, ses *session) {
	c.actOnDLQ(w, r, ses, "redrive", "redriven", func(e dlq.Entry) error {
		if e.Subject == "" {
			return errors.New("names no original subject")
		}
		_, err := c.dlq.Redrive(r.Context(), e)
		return err
	})
}

// dlqPurge deletes the selected entries, once the operator has typed
// "purge" to confirm.
func (c *Console) dlqPurge(w http.ResponseWriter, r *http.Request, ses *session) {
	if r.PostForm.Get("confirm") != "purge" {
		c.back(w, r, "Nothing purged: type purge in the box to confirm.")
		return
	}
	c.actOnDLQ(w, r, ses, "purge", "purged", func(e dlq.Entry) error { return c.dlq.Delete(r.Context(), e) })
}

func (c *Console) actOnDLQ(w http.ResponseWriter, r *http.Request, ses *session, action, done string, act func(dlq.Entry) error) {
	f, target, err := c.selection(r)
	if err != nil {
		c.back(w, r, err.Error())
		return
	}
	var n int
	var failed []string
	err = c.dlq.Each(r.Context(), f, func(e dlq.Entry) error {
		if err := act(e); err != nil {
			failed = append(failed, fmt.Sprintf("%d: %v", e.Seq, err))
			return nil
		}
		n++
		return nil
	})
	outcome := err
	if outcome == nil && len(failed) > 0 {
		outcome = errors.New(strings.Join(failed, "; "))
	}
	if auditErr := c.audit.record(r.Context(), ses.KeyID, "dlq."+action, target, outcome); auditErr != nil && err == nil {
		err = errors.New("the audit log did not take it")
	}
	msg := fmt.Sprintf("%d %s.", n, plural(n, "entry "+done, "entries "+done))
	if len(failed) > 0 {
		msg += fmt.Sprintf(" %d could not be: %s.", len(failed), strings.Join(failed, "; "))
	}
	if err != nil {
		c.cfg.Logger.Warn("console: acting on the DLQ", "action", action, "error", err)
		msg += " Then it stopped: " + err.Error() + "."
	}
	c.back(w, r, msg)
}

// back returns to the page the form was on, with a notice.
func (c *Console) back(w http.ResponseWriter, r *http.Request, notice string) {
	to := safeNext(r.PostForm.Get("back"))
	sep := "?"
	if strings.Contains(to, "?") {
		sep = "&"
	}
	http.Redirect(w, r, to+sep+"done="+url.QueryEscape(notice), http.StatusSeeOther)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
