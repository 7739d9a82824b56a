package console

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/event"
)

// runsPageSize is how many runs the Runs page lists at once.
const runsPageSize = 50

// maxRunField bounds what the runs filter takes of an order, a subscriber
// or a cursor, as the API's GET /v1/runs does.
const maxRunField = 512

// runFilter is the Runs page's form, as typed.
type runFilter struct {
	Tenant, Order, Subscriber, State string
}

// values is the filter as a query string's values.
func (f runFilter) values() url.Values {
	v := url.Values{}
	for k, x := range map[string]string{"tenant": f.Tenant, "order": f.Order, "subscriber": f.Subscriber, "state": f.State} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v
}

// readRunFilter reads the form and makes it the reader's filter; its error
// is a sentence for the operator. No tenant named is no listing (and no
// error): the page's empty form.
func readRunFilter(v url.Values) (runFilter, workflow.Filter, error) {
	ff := runFilter{Tenant: strings.TrimSpace(v.Get("tenant")), Order: strings.TrimSpace(v.Get("order")),
		Subscriber: strings.TrimSpace(v.Get("subscriber")), State: strings.TrimSpace(v.Get("state"))}
	f := workflow.Filter{Subject: ff.Order, Subscriber: ff.Subscriber, State: workflow.State(ff.State),
		Cursor: v.Get("cursor"), Limit: runsPageSize}
	switch {
	case ff.Tenant != "" && !event.ValidTenant(ff.Tenant):
		return ff, f, fmt.Errorf("%q is not a tenant id: 1 to 64 letters, digits, '-' or '_'.", ff.Tenant)
	case ff.State != "" && !slices.Contains(workflow.States, f.State):
		return ff, f, fmt.Errorf("%q is not a state: one of %s.", ff.State, statesText())
	case !plainField(ff.Order) || !plainField(ff.Subscriber) || !plainField(f.Cursor):
		return ff, f, fmt.Errorf("An order, a subscriber or a page is at most %d characters, none of them a control character.", maxRunField)
	case (ff.Order != "" || ff.Subscriber != "" || ff.State != "") && ff.Tenant == "":
		return ff, f, errors.New("Name the tenant: runs are listed one tenant at a time.")
	}
	return ff, f, nil
}

// plainField: short, and no control character (tenants write them).
func plainField(s string) bool {
	return len(s) <= maxRunField && !strings.ContainsFunc(s, unicode.IsControl)
}

func statesText() string {
	names := make([]string, len(workflow.States))
	for i, s := range workflow.States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// runsView is the Runs page.
type runsView struct {
	Filter runFilter
	States []workflow.State
	// Listed says Rows answer the filter.
	Listed bool
	Rows   []runRow
	// NextURL is the page after this one, FirstURL the first page when
	// this is a later one.
	NextURL, FirstURL string
}

// runRow is one run in the list.
type runRow struct {
	ID, Tenant, Order, For, Event, State string
	// Step is the step being taken or waiting, from 1, and what it does.
	Step                    int
	StepText                string
	Until, Created, Updated time.Time
}

// URL is the run's page.
func (r runRow) URL() string { return runURL(r.Tenant, r.ID) }

// NotificationsURL lists the notifications of the run's order.
func (r runRow) NotificationsURL() string {
	return Path + "notifications?" + url.Values{"tenant": {r.Tenant}, "order": {r.Order}}.Encode()
}

func rowOf(r workflow.Run) runRow {
	row := runRow{ID: r.ID, Tenant: r.Tenant, Order: r.Subject, For: r.For(), Event: eventOf(r).Type, State: string(r.State),
		Step: r.Step + 1, Until: r.Until, Created: r.Created, Updated: r.Updated}
	if r.Step < len(r.Route.Steps) {
		row.StepText = r.Route.Steps[r.Step].Describe()
	}
	return row
}

func (c *Console) runsPage(w http.ResponseWriter, r *http.Request, ses *session) {
	ff, f, err := readRunFilter(r.URL.Query())
	v := runsView{Filter: ff, States: workflow.States}
	page := func(status int, notice string) {
		c.render(w, status, "runs.html", view{Title: "Runs", Nav: "runs", Session: ses, Notice: notice, Data: v})
	}
	switch {
	case err != nil:
		page(http.StatusBadRequest, err.Error())
		return
	case ff.Tenant == "":
		page(http.StatusOK, "")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	listing, err := c.runs.List(ctx, ff.Tenant, f)
	if err != nil {
		c.cfg.Logger.Warn("console: listing runs", "tenant", ff.Tenant, "error", err)
		c.fail(w, r, ses, http.StatusServiceUnavailable, "The runs cannot be read right now.")
		return
	}
	v.Listed = true
	for _, run := range listing.Runs {
		v.Rows = append(v.Rows, rowOf(run))
	}
	// The reader pages by key (an order's runs together); within a page,
	// the newest first.
	slices.SortStableFunc(v.Rows, func(a, b runRow) int {
		return cmp.Or(b.Created.Compare(a.Created), strings.Compare(a.ID, b.ID))
	})
	if listing.Next != "" {
		next := ff.values()
		next.Set("cursor", listing.Next)
		v.NextURL = Path + "runs?" + next.Encode()
	}
	if f.Cursor != "" {
		v.FirstURL = Path + "runs?" + ff.values().Encode()
	}
	page(http.StatusOK, "")
}

// runURL is a run's page.
func runURL(tenant, id string) string {
	return Path + "runs/" + url.PathEscape(id) + "?" + url.Values{"tenant": {tenant}}.Encode()
}

// runPageView is one run's page.
type runPageView struct {
	Row runRow
	// Whom adds to Row.For what else the run's recipient has: role, name,
	// the addresses For does not already show.
	Whom     string
	Steps    []stepView
	Timeline []moment
	Event    event.Event
	// EventJSON is the event that started the run, indented.
	EventJSON string
	// Cancellable says the run has not ended: the page offers Cancel.
	Cancellable bool
}

// stepView is one of the route's steps, numbered from 1.
type stepView struct {
	N          int
	Kind, What string
	// Current marks the step being taken or waiting.
	Current bool
}

func (c *Console) runPage(w http.ResponseWriter, r *http.Request, ses *session) {
	tenant, id := strings.TrimSpace(r.URL.Query().Get("tenant")), r.PathValue("id")
	run, ok := c.readRun(w, r, ses, tenant, id)
	if !ok {
		return
	}
	c.render(w, http.StatusOK, "run.html", view{Title: "Run " + run.ID, Nav: "runs", Session: ses,
		Notice: r.URL.Query().Get("done"), Data: runPageOf(run)})
}

// readRun reads the tenant's run, or answers: a run of another tenant, or
// none, alike.
func (c *Console) readRun(w http.ResponseWriter, r *http.Request, ses *session, tenant, id string) (workflow.Run, bool) {
	if !event.ValidTenant(tenant) {
		c.noRun(w, r, ses)
		return workflow.Run{}, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	run, err := c.runs.Get(ctx, tenant, id)
	switch {
	case errors.Is(err, workflow.ErrNotFound):
		c.noRun(w, r, ses)
		return run, false
	case err != nil:
		c.cfg.Logger.Warn("console: reading a run", "tenant", tenant, "error", err)
		c.fail(w, r, ses, http.StatusServiceUnavailable, "The runs cannot be read right now.")
		return run, false
	}
	return run, true
}

// noRun is the answer for a run the tenant does not have: the same
// whether another tenant has it or none does.
func (c *Console) noRun(w http.ResponseWriter, r *http.Request, ses *session) {
	c.fail(w, r, ses, http.StatusNotFound, "There is no such run for that tenant: check the id and the tenant (runs are kept 90 days).")
}

func runPageOf(r workflow.Run) runPageView {
	v := runPageView{Row: rowOf(r), Whom: whom(r), Event: eventOf(r), Cancellable: !r.State.Ended()}
	for i, st := range r.Route.Steps {
		v.Steps = append(v.Steps, stepView{N: i + 1, Kind: st.Kind(), What: st.Describe(), Current: i == r.Step && !r.State.Ended()})
	}
	for _, e := range r.Timeline {
		v.Timeline = append(v.Timeline, moment{At: e.At, Step: e.Step + 1, What: e.What, Detail: e.Detail, Bad: e.What == "failed"})
	}
	var indented bytes.Buffer
	if json.Indent(&indented, r.Event, "", "  ") == nil {
		v.EventJSON = indented.String()
	}
	return v
}

// whom is what the run's recipient has beyond Run.For: "(supplier) Ольга
// Петрова, +79990001122".
func whom(r workflow.Run) string {
	p, shown := r.Recipient, r.For()
	var parts []string
	for _, s := range []string{p.Name, p.Subscriber, p.Email, p.Phone, p.Webhook} {
		if s != "" && s != shown {
			parts = append(parts, s)
		}
	}
	text := strings.Join(parts, ", ")
	if p.Role != "" {
		text = strings.TrimSpace("(" + p.Role + ") " + text)
	}
	return text
}

// eventOf is the event that started the run, as stored: read, not
// validated again (it was when it came in).
func eventOf(r workflow.Run) event.Event {
	var ev event.Event
	_ = json.Unmarshal(r.Event, &ev)
	return ev
}

// runCancel ends a run, as the API's cancel does, and returns to its page
// with what came of it.
func (c *Console) runCancel(w http.ResponseWriter, r *http.Request, ses *session) {
	tenant, id := strings.TrimSpace(r.PostForm.Get("tenant")), r.PathValue("id")
	if !event.ValidTenant(tenant) {
		c.noRun(w, r, ses)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	run, err := c.runs.Cancel(ctx, tenant, id, "the console (key "+ses.KeyID+")")
	auditErr := c.audit.record(r.Context(), ses.KeyID, "run.cancel", tenant+"/"+id, err)
	if errors.Is(err, workflow.ErrNotFound) {
		c.noRun(w, r, ses)
		return
	}
	msg := "Cancelled: nothing more is sent."
	switch {
	case errors.Is(err, workflow.ErrEnded):
		msg = fmt.Sprintf("Not cancelled: the run has ended (%s).", run.State)
	case err != nil && run.State == workflow.Cancelled:
		// Its timer stays, but finds the run no longer waiting when it
		// fires, and is dropped.
		c.cfg.Logger.Warn("console: removing a cancelled run's timer", "tenant", tenant, "error", err)
		msg += " Its timer could not be removed: it will be dropped when it fires."
	case err != nil:
		c.cfg.Logger.Warn("console: cancelling a run", "tenant", tenant, "error", err)
		msg = "Not cancelled: the runs cannot be written right now."
	}
	if auditErr != nil {
		msg += " The audit log did not take it."
	}
	http.Redirect(w, r, runURL(tenant, id)+"&done="+url.QueryEscape(msg), http.StatusSeeOther)
}
