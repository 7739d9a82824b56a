package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/notification"
)

func historyStore(t *testing.T) *history.Store {
	t.Helper()
	s, err := history.Open(heraldtest.Context(t), "sqlite:"+filepath.Join(t.TempDir(), "history.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// listing is GET /v1/notifications's body.
type listing struct {
	Tenant        string `json:"tenant"`
	Notifications []struct {
		ID, Order, Recipient, State string
		CreatedAt                   time.Time `json:"created_at"`
	} `json:"notifications"`
	NextCursor string `json:"next_cursor"`
}

func (b *bundle) list(t *testing.T, key, query string) (listing, answer) {
	t.Helper()
	got := b.do(t, http.MethodGet, "/v1/notifications?"+query, key, nil)
	var l listing
	if got.status == http.StatusOK {
		require.NoError(t, json.Unmarshal([]byte(got.body), &l))
	}
	return l, got
}

// seed indexes n notifications of tenant, one a second from start, on
// orders PO-0…PO-2 in turn; every third delivered.
func seed(t *testing.T, store *history.Store, tenant string, n int, start time.Time) []history.Row {
	t.Helper()
	rows := make([]history.Row, n)
	for i := range rows {
		at := start.Add(time.Duration(i) * time.Second)
		recipient := fmt.Sprintf("buyer%d@zarya.example", i%2)
		key := fmt.Sprintf("%s:PO-%d:1:purchase_order:email:%s:%d", tenant, i%3, recipient, i)
		rows[i] = history.Row{Tenant: tenant, ID: notification.ID(key), Order: fmt.Sprintf("PO-%d", i%3), Document: "purchase_order",
			Channel: "email", Recipient: recipient, State: history.Pending, CreatedAt: at, UpdatedAt: at}
	}
	require.NoError(t, store.Accept(heraldtest.Context(t), rows))
	var delivered []history.Row
	for i := 0; i < n; i += 3 {
		r := rows[i]
		r.State, r.Provider, r.Tries, r.Revision, r.UpdatedAt = history.Delivered, "ses", 1, uint64(i+1), r.UpdatedAt.Add(time.Second)
		delivered = append(delivered, r)
		rows[i] = r
	}
	require.NoError(t, store.Apply(heraldtest.Context(t), delivered))
	return rows
}

// A tenant's notifications come newest first, a page at a time: following
// next_cursor (or the Link header) visits each once, and nothing of
// another tenant's.
func TestListsATenantsNotificationsNewestFirst(t *testing.T) {
	t.Parallel()
	store := historyStore(t)
	b := setup(t, api.Config{History: store})
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	rows := seed(t, store, "acme", 25, start)
	seed(t, store, "globex", 3, start)

	var seen []string
	query := "limit=10"
	for page := 0; ; page++ {
		l, got := b.list(t, acmeRead, query)
		require.Equal(t, http.StatusOK, got.status, got.body)
		require.Equal(t, "acme", l.Tenant)
		for _, n := range l.Notifications {
			seen = append(seen, n.ID)
		}
		if l.NextCursor == "" {
			require.Empty(t, got.header.Get("Link"))
			break
		}
		require.Len(t, l.Notifications, 10)
		link := got.header.Get("Link")
		require.True(t, strings.HasSuffix(link, `>; rel="next"`), link)
		next, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
		require.NoError(t, err)
		require.Equal(t, l.NextCursor, next.Query().Get("cursor"))
		query = next.RawQuery
		require.Less(t, page, 3)
	}
	want := make([]string, len(rows))
	for i, r := range rows {
		want[len(rows)-1-i] = r.ID
	}
	require.Equal(t, want, seen)

	l, got := b.list(t, globexRead, "")
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.Len(t, l.Notifications, 3)
	l, got = b.list(t, globexRead, "tenant=acme")
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.Empty(t, l.Notifications, "another tenant's listing reads as a tenant without notifications")
	l, got = b.list(t, adminKey, "tenant=acme&limit=100")
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.Len(t, l.Notifications, 25)
}

func TestListingFilters(t *testing.T) {
	t.Parallel()
	store := historyStore(t)
	b := setup(t, api.Config{History: store})
	seed(t, store, "acme", 12, time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))

	for query, want := range map[string]int{
		"order=PO-1":                     4,
		"recipient=BUYER1@zarya.example": 6,
		"state=delivered":                4,
		"state=pending&order=PO-2":       4,
		"state=delivered&order=PO-0&recipient=buyer0@zarya.example": 2,
		"order=PO-404": 0,
	} {
		l, got := b.list(t, acmeRead, query)
		require.Equal(t, http.StatusOK, got.status, "%s: %s", query, got.body)
		require.Len(t, l.Notifications, want, query)
		for _, n := range l.Notifications {
			v, _ := url.ParseQuery(query)
			require.True(t, v.Get("order") == "" || n.Order == v.Get("order"), query)
			require.True(t, v.Get("state") == "" || n.State == v.Get("state"), query)
		}
	}

	first, got := b.list(t, acmeRead, "limit=2&order=PO-1")
	require.Equal(t, http.StatusOK, got.status, got.body)
	for name, c := range map[string]struct {
		key, query string
		status     int
	}{
		"a cursor with other filters": {acmeRead, "order=PO-2&cursor=" + first.NextCursor, http.StatusUnprocessableEntity},
		"another tenant's cursor":     {globexRead, "order=PO-1&cursor=" + first.NextCursor, http.StatusUnprocessableEntity},
		"a made-up cursor":            {acmeRead, "cursor=bm90LWEtY3Vyc29y", http.StatusUnprocessableEntity},
		"an unknown state":            {acmeRead, "state=lost", http.StatusUnprocessableEntity},
		"too large a page":            {acmeRead, "limit=101", http.StatusUnprocessableEntity},
		"admin, no tenant":            {adminKey, "", http.StatusUnprocessableEntity},
		"without a key":               {"", "", http.StatusUnauthorized},
		"with a send-only key":        {acmeSend, "", http.StatusForbidden},
	} {
		_, got := b.list(t, c.key, c.query)
		require.Equal(t, c.status, got.status, "%s: %s", name, got.body)
		require.Equal(t, "application/problem+json", got.header.Get("Content-Type"), name)
	}
}

func TestListingWithoutAnIndexIsUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	_, got := b.list(t, acmeRead, "")
	require.Equal(t, http.StatusServiceUnavailable, got.status, got.body)
	require.Contains(t, got.body, "history.url")
}

// A notification no worker has claimed reads as pending, from the index;
// another tenant still finds nothing.
func TestAPendingNotificationIsRead(t *testing.T) {
	t.Parallel()
	store := historyStore(t)
	b := setup(t, api.Config{History: store})
	rows := seed(t, store, "acme", 2, time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	pending := rows[1]

	got := b.do(t, http.MethodGet, "/v1/notifications/"+pending.ID, acmeRead, nil)
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.JSONEq(t, `{"id":"`+pending.ID+`","tenant":"acme","order":"PO-1","document":"purchase_order","channel":"email",
		"recipient":"buyer1@zarya.example","state":"pending","tries":0,"attempts":[],"reports":[],
		"created_at":"2026-11-30T09:00:01Z","updated_at":"2026-11-30T09:00:01Z"}`, got.body)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/v1/notifications/"+pending.ID, globexRead, nil).status)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodPost, "/v1/notifications/"+pending.ID+"/retry", acmeSend, nil).status)
}

// A notification the router did not plan reads, and is listed, as skipped
// with the reason; another tenant still finds nothing.
func TestASkippedNotificationIsReadWithItsReason(t *testing.T) {
	t.Parallel()
	store := historyStore(t)
	b := setup(t, api.Config{History: store})
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	id := notification.ID(`acme:PO-7:1:purchase_order::account "zarya" roles [sales]`)
	require.NoError(t, store.Accept(heraldtest.Context(t), []history.Row{{Tenant: "acme", ID: id, Order: "PO-7",
		Document: "purchase_order", Recipient: `account "zarya" roles [sales]`, State: history.Skipped,
		Reason: `skipped: no recipient: account "zarya" roles [sales]`, CreatedAt: at, UpdatedAt: at}}))

	got := b.do(t, http.MethodGet, "/v1/notifications/"+id, acmeRead, nil)
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.JSONEq(t, `{"id":"`+id+`","tenant":"acme","order":"PO-7","document":"purchase_order","channel":"",
		"recipient":"account \"zarya\" roles [sales]","state":"skipped","reason":"skipped: no recipient: account \"zarya\" roles [sales]",
		"tries":0,"attempts":[],"reports":[],"created_at":"2026-11-30T09:00:00Z","updated_at":"2026-11-30T09:00:00Z"}`, got.body)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/v1/notifications/"+id, globexRead, nil).status)

	l, listed := b.list(t, acmeRead, "state=skipped")
	require.Equal(t, http.StatusOK, listed.status, listed.body)
	require.Len(t, l.Notifications, 1)
	require.Equal(t, "skipped", l.Notifications[0].State)
}
