package console

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/report"
)

// notificationView is one notification's page: what the index and the
// ledger hold of it, its timeline, its document.
type notificationView struct {
	ID, Tenant string
	Facts      facts
	// Claimed says the ledger has it (a worker claimed it); Indexed, the
	// index has a row for it.
	Claimed, Indexed bool
	Timeline         []moment
	Document         document
	// Retry says to offer a retry: it failed.
	Retry bool
	// Runs are the workflow runs of the notification's order, each with
	// its own timeline: the waits, wakes and events around its sends.
	Runs []runView
}

// runView is one workflow run of the order.
type runView struct {
	ID, State, Recipient string
	// URL is the run's own page.
	URL         string
	Step, Steps int
	Timeline    []moment
}

// maxRuns bounds the runs one notification's page shows.
const maxRuns = 20

// orderRuns are the workflow runs of the tenant's order, oldest step
// first; none when it cannot tell (logged: the page stands without them).
func (c *Console) orderRuns(ctx context.Context, tenant, order string) []runView {
	if order == "" {
		return nil
	}
	page, err := c.runs.List(ctx, tenant, workflow.Filter{Subject: order, Limit: maxRuns})
	if err != nil {
		c.cfg.Logger.Warn("console: reading the order's runs", "error", err)
		return nil
	}
	out := make([]runView, len(page.Runs))
	for i, r := range page.Runs {
		// Steps are numbered from 1, as the run's own page numbers them.
		v := runView{ID: r.ID, URL: runURL(tenant, r.ID), State: string(r.State), Recipient: r.For(), Step: r.Step + 1, Steps: len(r.Route.Steps)}
		for _, e := range r.Timeline {
			v.Timeline = append(v.Timeline, moment{At: e.At, What: fmt.Sprintf("Step %d: %s", e.Step+1, e.What), Detail: e.Detail,
				Bad: e.What == "failed"})
		}
		out[i] = v
	}
	return out
}

// facts are where a notification stands, the ledger's word over the
// index's.
type facts struct {
	Order, Document, Channel, Recipient, State, Reason string
	Retryable                                          bool
	Provider, ProviderMessageID                        string
	Tries, Resends                                     int
	DedupeKey, EventID, Template                       string
	FallbackTo, FallbackOf, RedeliveryOf               string
	UpdatedAt                                          time.Time
}

// moment is one thing Herald recorded of a notification or a run, at At.
type moment struct {
	At   time.Time
	What string
	// Provider and ErrorClass (transient, permanent, ambiguous) are a
	// try's or a report's.
	Provider, ErrorClass string
	// Step is a workflow run's step, from 1: on a run's timeline only.
	Step   int
	Detail string
	// Bad marks what went wrong.
	Bad bool
}

// When is the moment's time, to the millisecond: tries come quickly.
func (m moment) When() string { return m.At.UTC().Format("2006-01-02 15:04:05.000 UTC") }

// document is the notification's document, and its download link when one
// can be made; Why says why there is none.
type document struct {
	Object  string
	Size    int64
	Stored  time.Time
	Link    string
	Expires time.Time
	Why     string
}

func (c *Console) notificationPage(w http.ResponseWriter, r *http.Request, ses *session) {
	id, tenant := r.PathValue("id"), strings.TrimSpace(r.URL.Query().Get("tenant"))
	if tenant == "" {
		v := notificationsView{Search: search{ID: id}, States: history.States, Indexed: c.cfg.History != nil}
		c.render(w, http.StatusBadRequest, "notifications.html", view{Title: "Notifications", Nav: "notifications", Session: ses,
			Notice: "Name the tenant too: a notification is looked up in its tenant's ledger.", Data: v})
		return
	}
	v, err := c.readNotification(r.Context(), tenant, id)
	if err != nil {
		c.cfg.Logger.Warn("console: reading a notification", "tenant", tenant, "notification", id, "error", err)
		c.fail(w, r, ses, http.StatusServiceUnavailable, "The ledger cannot be read right now.")
		return
	}
	if !v.Claimed && !v.Indexed {
		msg := fmt.Sprintf("Tenant %s has no notification %s in the ledger", tenant, id)
		if c.cfg.History != nil {
			msg += " or the index"
		}
		c.fail(w, r, ses, http.StatusNotFound, msg+": check the id and the tenant (the ledger forgets after its retention).")
		return
	}
	c.render(w, http.StatusOK, "notification.html", view{Title: "Notification", Nav: "notifications", Session: ses,
		Notice: r.URL.Query().Get("done"), Data: v})
}

// readNotification gathers what the ledger and the index hold of one
// notification; neither having it is no error (v says so).
func (c *Console) readNotification(ctx context.Context, tenant, id string) (notificationView, error) {
	v := notificationView{ID: id, Tenant: tenant}
	e, err := c.ledger.ByID(ctx, tenant, id)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
	case err != nil:
		return v, err
	default:
		v.Claimed = true
	}
	var row history.Row
	if c.cfg.History != nil {
		row, err = c.cfg.History.Get(ctx, tenant, id)
		switch {
		case errors.Is(err, history.ErrNotFound):
		case err != nil:
			// The ledger is the truth; the index only adds when it was
			// created.
			c.cfg.Logger.Warn("console: reading the notification index", "error", err)
		default:
			v.Indexed = true
		}
	}
	v.Facts = factsOf(e, row, v.Claimed)
	v.Timeline = timeline(e, row, v.Claimed, v.Indexed)
	v.Retry = v.Claimed && e.State == ledger.Failed && c.cfg.Retry != nil
	if v.Claimed || v.Indexed {
		v.Document = c.document(ctx, e, v.Facts)
		if !v.Document.Stored.IsZero() {
			v.Timeline = append(v.Timeline, moment{At: v.Document.Stored, What: "Document stored",
				Detail: fmt.Sprintf("%s, rendered and stored (%d bytes)", v.Document.Object, v.Document.Size)})
		}
	}
	slices.SortStableFunc(v.Timeline, func(a, b moment) int { return a.At.Compare(b.At) })
	v.Runs = c.orderRuns(ctx, tenant, v.Facts.Order)
	return v, nil
}

func factsOf(e ledger.Entry, row history.Row, claimed bool) facts {
	f := facts{Order: cmp.Or(e.Order, row.Order), Document: cmp.Or(e.Document, row.Document),
		Channel: cmp.Or(e.Channel, row.Channel), Recipient: cmp.Or(e.Recipient, row.Recipient), State: row.State,
		Reason: row.Reason, Provider: row.Provider, ProviderMessageID: row.ProviderMessageID, Tries: row.Tries, UpdatedAt: row.UpdatedAt}
	if claimed {
		f.State, f.Reason, f.Retryable, f.Provider, f.ProviderMessageID = string(e.State), e.Reason, e.Retryable, e.Provider, e.ProviderMessageID
		f.Tries, f.Resends, f.DedupeKey, f.EventID, f.Template = e.Tries, e.Resends, e.DedupeKey, e.EventID, e.Template
		f.FallbackTo, f.FallbackOf, f.RedeliveryOf, f.UpdatedAt = e.FallbackTo, e.FallbackOf, e.RedeliveryOf, e.UpdatedAt
	}
	return f
}

// timeline is what was recorded of the notification: its creation (the
// index's), each try the ledger keeps, its outcome, the provider's reports,
// and where it stands when it is still under way. Nothing else is known.
func timeline(e ledger.Entry, row history.Row, claimed, indexed bool) []moment {
	var out []moment
	if indexed && !row.CreatedAt.IsZero() {
		out = append(out, moment{At: row.CreatedAt, What: "Created",
			Detail: "when its event was routed or the API was asked, as the index records it (or, had that record not reached the index, when a worker first claimed it)"})
	}
	if !claimed {
		return out
	}
	first := e.Tries - len(e.Attempts) + 1 // the entry keeps the latest tries only
	for i, a := range e.Attempts {
		m := moment{At: a.Time, What: fmt.Sprintf("Try %d", first+i), Provider: a.Provider, ErrorClass: api.ErrorClass(e, i),
			Detail: a.Error, Bad: a.Error != ""}
		if a.Error == "" {
			m.Detail = "accepted"
		}
		if a.Note != "" {
			m.Detail += " (" + a.Note + ")"
		}
		out = append(out, m)
	}
	switch {
	case e.State.Settled() && !e.SettledAt.IsZero():
		out = append(out, outcome(e))
	case !e.State.Settled() && e.Resends > 0:
		out = append(out, moment{At: e.UpdatedAt, What: "Now " + string(e.State),
			Detail: fmt.Sprintf("sent back to delivery after it failed (resend %d)", e.Resends)})
	case !e.State.Settled():
		out = append(out, moment{At: e.UpdatedAt, What: "Now " + string(e.State), Detail: e.Reason})
	}
	for _, rep := range e.Reports {
		what := "Reported " + string(rep.Kind)
		if rep.Hard {
			what += " (hard)"
		}
		out = append(out, moment{At: rep.Time, What: what, Provider: rep.Provider, Detail: rep.Detail,
			Bad: rep.Kind == report.Bounced || rep.Kind == report.Complained})
	}
	return out
}

// outcome is the write that settled the entry.
func outcome(e ledger.Entry) moment {
	m := moment{At: e.SettledAt, What: capitalized(string(e.State)), Provider: e.Provider, Detail: e.Reason, Bad: e.State == ledger.Failed}
	switch {
	case e.State == ledger.Delivered:
		m.Detail = "accepted by the provider"
		if e.ProviderMessageID != "" {
			m.Detail += " as " + e.ProviderMessageID
		}
	case e.State == ledger.Failed && e.Retryable:
		m.Detail += " — a retry may succeed"
	case e.State == ledger.Failed:
		m.Detail += " — refused for good"
	}
	return m
}

func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// document finds the notification's document — named by the delivery
// message the ledger keeps, or by its dedupe key, which holds the order's
// revision — checks it is stored, and signs a link to it as emails carry.
func (c *Console) document(ctx context.Context, e ledger.Entry, f facts) document {
	var d document
	var named bool
	d.Object, named = objectOf(e, f)
	if d.Object == "" {
		d.Why = "It carries no document, or not one Herald can name: a document is named by its order, type and revision."
		if e.DedupeKey == "" {
			d.Why = "Not known before a worker claims the notification: the ledger's entry names the order's revision."
		}
		return d
	}
	stored, err := c.storedInfo(ctx, d.Object)
	switch {
	case errors.Is(err, jetstream.ErrObjectNotFound) && named:
		d.Why = "It is no longer stored: deleted since it was sent."
		return d
	case errors.Is(err, jetstream.ErrObjectNotFound):
		d.Why = "Nothing is stored under that name: the notification carries no document (a template alone), or it was deleted."
		return d
	case err != nil:
		c.cfg.Logger.Warn("console: reading a document's info", "object", d.Object, "error", err)
		d.Why = "Whether it is stored could not be checked just now."
	default:
		d.Size, d.Stored = int64(stored.Size), stored.ModTime
	}
	if c.cfg.Links == nil {
		d.Why = "No download link can be made: document links are not configured (documents.link_secret_env or link_secret_file)."
		return d
	}
	d.Link, d.Expires = c.cfg.Links.Link(d.Object, c.cfg.Now())
	return d
}

func (c *Console) storedInfo(ctx context.Context, name string) (*jetstream.ObjectInfo, error) {
	obj, err := c.js.ObjectStore(ctx, documents.Bucket)
	if err != nil {
		return nil, err
	}
	return obj.GetInfo(ctx, name)
}

// objectOf names the notification's document: from the delivery message
// when the ledger keeps it (a failed-but-retryable one, a webhook) — named
// says so — else from its dedupe key tenant:order:revision:document:channel:recipient,
// which names one if the notification carries any.
func objectOf(e ledger.Entry, f facts) (name string, named bool) {
	var d notification.Delivery
	if len(e.Delivery) > 0 && json.Unmarshal(e.Delivery, &d) == nil && d.Document != nil && d.Document.Object != "" {
		return d.Document.Object, true
	}
	if f.Order == "" || f.Document == "" {
		return "", false
	}
	// The order and the document are known, so the key is read from both
	// ends whatever ':' they hold.
	rest, ok := strings.CutPrefix(e.DedupeKey, e.Tenant+":"+f.Order+":")
	if !ok {
		return "", false
	}
	rev, rest, ok := strings.Cut(rest, ":")
	revision, err := strconv.Atoi(rev)
	if !ok || err != nil || revision < 1 || !strings.HasPrefix(rest, f.Document+":") {
		return "", false
	}
	return documents.ObjectName(e.Tenant, f.Order, f.Document, revision), false
}

// notificationRetry sends a failed notification back to delivery, as the
// API's retry does, and returns to its page with what came of it.
func (c *Console) notificationRetry(w http.ResponseWriter, r *http.Request, ses *session) {
	id, tenant := r.PathValue("id"), strings.TrimSpace(r.PostForm.Get("tenant"))
	var err error
	if c.cfg.Retry == nil {
		err = errors.New("this console cannot retry: it was started without the API")
	} else {
		_, err = c.cfg.Retry(r.Context(), tenant, id)
	}
	msg := "Sent back to delivery: it is retrying."
	if err != nil {
		msg = "Not retried: " + err.Error() + "."
	}
	if auditErr := c.audit.record(r.Context(), ses.KeyID, "notification.retry", tenant+"/"+id, err); auditErr != nil {
		msg += " The audit log did not take it."
	}
	http.Redirect(w, r, notificationURL(tenant, id)+"&done="+url.QueryEscape(msg), http.StatusSeeOther)
}
