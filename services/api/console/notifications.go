package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/shared/history"
)

// notificationsPageSize is how many notifications a search lists at once.
const notificationsPageSize = 50

// search is the Notifications page's form, as typed.
type search struct {
	ID, Tenant, Order, Recipient, State, From, To string
}

// searching says whether the form asks for a listing (a tenant or a
// filter named), rather than being the empty page.
func (s search) searching() bool {
	return s.Tenant != "" || s.Order != "" || s.Recipient != "" || s.State != "" || s.From != "" || s.To != ""
}

// values is the search as a query string's values, without the id.
func (s search) values() url.Values {
	v := url.Values{}
	for k, x := range map[string]string{"tenant": s.Tenant, "order": s.Order, "recipient": s.Recipient,
		"state": s.State, "from": s.From, "to": s.To} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v
}

// readSearch reads the form and makes it an index query; its error is a
// sentence for the operator.
func readSearch(v url.Values) (search, history.Query, error) {
	s := search{ID: strings.TrimSpace(v.Get("id")), Tenant: strings.TrimSpace(v.Get("tenant")),
		Order: strings.TrimSpace(v.Get("order")), Recipient: strings.TrimSpace(v.Get("recipient")),
		State: strings.TrimSpace(v.Get("state")), From: strings.TrimSpace(v.Get("from")), To: strings.TrimSpace(v.Get("to"))}
	q := history.Query{Tenant: s.Tenant, Order: s.Order, Recipient: s.Recipient, State: s.State,
		Limit: notificationsPageSize, Cursor: v.Get("cursor")}
	if s.State != "" && !slices.Contains(history.States, s.State) {
		return s, q, fmt.Errorf("%q is not a state: one of %s.", s.State, strings.Join(history.States, ", "))
	}
	var err error
	if q.Since, err = parseWhen(s.From, false); err != nil {
		return s, q, fmt.Errorf("From: %w", err)
	}
	if q.Until, err = parseWhen(s.To, true); err != nil {
		return s, q, fmt.Errorf("To: %w", err)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return s, q, errors.New("From must come before To.")
	}
	if s.searching() && s.Tenant == "" {
		return s, q, errors.New("Name the tenant: the index lists one tenant's notifications at a time.")
	}
	return s, q, nil
}

// parseWhen reads a time as the form's fields send it (2026-11-30T09:00),
// or as RFC 3339; without a zone it is UTC. A date alone is its midnight,
// or for the end of a range the midnight after, so that To covers the day.
func parseWhen(s string, end bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		if end {
			t = t.AddDate(0, 0, 1)
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time such as 2026-11-30T09:00 or a date such as 2026-11-30 (UTC).", s)
}

// notificationsView is the Notifications page.
type notificationsView struct {
	Search search
	States []string
	// Indexed says a notification index is configured; without one only
	// the lookup by id works.
	Indexed bool
	// Listed says Rows answer the search.
	Listed bool
	Rows   []history.Row
	// NextURL is the page after this one, FirstURL the first page when
	// this is a later one.
	NextURL, FirstURL string
}

func (c *Console) notificationsPage(w http.ResponseWriter, r *http.Request, ses *session) {
	s, q, err := readSearch(r.URL.Query())
	v := notificationsView{Search: s, States: history.States, Indexed: c.cfg.History != nil}
	page := func(status int, notice string) {
		c.render(w, status, "notifications.html", view{Title: "Notifications", Nav: "notifications", Session: ses, Notice: notice, Data: v})
	}
	switch {
	case s.ID != "" && s.Tenant == "":
		page(http.StatusBadRequest, "Name the tenant too: a notification is looked up in its tenant's ledger.")
		return
	case s.ID != "":
		http.Redirect(w, r, notificationURL(s.Tenant, s.ID), http.StatusSeeOther)
		return
	case err != nil:
		page(http.StatusBadRequest, err.Error())
		return
	case !s.searching() || c.cfg.History == nil:
		page(http.StatusOK, r.URL.Query().Get("done"))
		return
	}
	listing, err := c.cfg.History.List(r.Context(), q)
	switch {
	case errors.Is(err, history.ErrBadCursor):
		page(http.StatusBadRequest, "That page belongs to another search: start again from the first page.")
		return
	case errors.Is(err, history.ErrBadQuery):
		page(http.StatusBadRequest, err.Error())
		return
	case err != nil:
		c.cfg.Logger.Warn("console: searching the notification index", "error", err)
		c.fail(w, r, ses, http.StatusServiceUnavailable, "The notification index cannot be read right now.")
		return
	}
	v.Listed, v.Rows = true, listing.Rows
	first := Path + "notifications?" + s.values().Encode()
	if listing.Next != "" {
		next := s.values()
		next.Set("cursor", listing.Next)
		v.NextURL = Path + "notifications?" + next.Encode()
	}
	if q.Cursor != "" {
		v.FirstURL = first
	}
	page(http.StatusOK, "")
}

// notificationURL is a notification's page.
func notificationURL(tenant, id string) string {
	return Path + "notifications/" + url.PathEscape(id) + "?" + url.Values{"tenant": {tenant}}.Encode()
}
