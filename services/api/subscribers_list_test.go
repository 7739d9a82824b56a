package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
)

// subscriberListing is GET /v1/subscribers's body.
type subscriberListing struct {
	Tenant      string `json:"tenant"`
	Subscribers []struct {
		ID, Name, Email, Phone, WhatsApp, Locale, Timezone string
		UpdatedAt                                          time.Time `json:"updated_at"`
	} `json:"subscribers"`
	NextCursor string `json:"next_cursor"`
}

func (b *bundle) subscribers(t *testing.T, key, query string) (subscriberListing, answer) {
	t.Helper()
	got := b.do(t, http.MethodGet, "/v1/subscribers?"+query, key, nil)
	var l subscriberListing
	if got.status == http.StatusOK {
		require.NoError(t, json.Unmarshal([]byte(got.body), &l))
	}
	return l, got
}

// indexSubscribers writes subscribers to the index as the history service
// does from the bucket: n of tenant, u-00…, every other one at
// buyer1@zarya.example.
func indexSubscribers(t *testing.T, store *history.Store, tenant string, n int) {
	t.Helper()
	changes := make([]history.SubscriberChange, n)
	for i := range changes {
		changes[i] = history.SubscriberChange{Subscriber: history.Subscriber{Tenant: tenant, ID: fmt.Sprintf("u-%02d", i),
			Name: fmt.Sprintf("Buyer %d", i), Email: fmt.Sprintf("buyer%d@zarya.example", i%2), Phone: fmt.Sprintf("+3460011%04d", i),
			Locale: "es", Timezone: "Europe/Madrid", UpdatedAt: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Revision: uint64(i + 1)}}
	}
	require.NoError(t, store.ApplySubscribers(heraldtest.Context(t), changes))
}

// A tenant's subscribers are found by email whatever its case, and by
// number; another tenant's stay out.
func TestListsSubscribersByEmail(t *testing.T) {
	t.Parallel()
	store := historyStore(t)
	b := setup(t, api.Config{History: store})
	indexSubscribers(t, store, "acme", 5)
	indexSubscribers(t, store, "globex", 5)

	l, got := b.subscribers(t, acmeRead, "email=BUYER1@Zarya.example")
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.Equal(t, "acme", l.Tenant)
	require.Len(t, l.Subscribers, 2)
	require.Equal(t, "u-01", l.Subscribers[0].ID)
	require.Equal(t, "u-03", l.Subscribers[1].ID)
	require.Equal(t, "buyer1@zarya.example", l.Subscribers[0].Email)
	require.Equal(t, "Europe/Madrid", l.Subscribers[0].Timezone)

	l, got = b.subscribers(t, acmeRead, "phone=%2B34600110004")
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.Len(t, l.Subscribers, 1)
	require.Equal(t, "u-04", l.Subscribers[0].ID)

	l, got = b.subscribers(t, adminKey, "tenant=globex&email=buyer0@zarya.example")
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.Len(t, l.Subscribers, 3)
	l, got = b.subscribers(t, globexRead, "tenant=acme")
	require.Equal(t, http.StatusOK, got.status, got.body)
	require.Empty(t, l.Subscribers, "another tenant's listing reads as a tenant without subscribers")
}

// Pages follow one another by next_cursor (or the Link header), each
// subscriber once; a cursor altered, or given with other filters, and a
// query the index refuses are answered 422 naming the parameter.
func TestSubscriberPagesAndBadQueries(t *testing.T) {
	t.Parallel()
	store := historyStore(t)
	b := setup(t, api.Config{History: store})
	indexSubscribers(t, store, "acme", 25)

	var seen []string
	query := "limit=10"
	for page := 0; ; page++ {
		l, got := b.subscribers(t, acmeRead, query)
		require.Equal(t, http.StatusOK, got.status, got.body)
		for _, s := range l.Subscribers {
			seen = append(seen, s.ID)
		}
		if l.NextCursor == "" {
			require.Empty(t, got.header.Get("Link"))
			break
		}
		link := got.header.Get("Link")
		next, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`))
		require.NoError(t, err)
		require.Equal(t, l.NextCursor, next.Query().Get("cursor"))
		query = next.RawQuery
		require.Less(t, page, 3)
	}
	require.Len(t, seen, 25)
	require.IsIncreasing(t, seen)

	first, got := b.subscribers(t, acmeRead, "limit=2&email=buyer1@zarya.example")
	require.Equal(t, http.StatusOK, got.status, got.body)
	altered := []byte(first.NextCursor)
	altered[3] ^= 1
	for name, c := range map[string]struct {
		key, query, names string
		status            int
	}{
		"a cursor with other filters": {acmeRead, "email=buyer0@zarya.example&cursor=" + first.NextCursor, "query.cursor", http.StatusUnprocessableEntity},
		"another tenant's cursor":     {globexRead, "email=buyer1@zarya.example&cursor=" + first.NextCursor, "query.cursor", http.StatusUnprocessableEntity},
		"an altered cursor":           {acmeRead, "email=buyer1@zarya.example&cursor=" + string(altered), "query.cursor", http.StatusUnprocessableEntity},
		"not an email":                {acmeRead, "email=buyer1", "query.email", http.StatusUnprocessableEntity},
		"an email with a newline":     {acmeRead, "email=buyer1@zarya.example%0ABcc:x@y.example", "query.email", http.StatusUnprocessableEntity},
		"not an E.164 number":         {acmeRead, "phone=600110004", "query.phone", http.StatusUnprocessableEntity},
		"too large a page":            {acmeRead, "limit=101", "query.limit", http.StatusUnprocessableEntity},
		"admin, no tenant":            {adminKey, "", "", http.StatusUnprocessableEntity},
		"without a key":               {"", "", "", http.StatusUnauthorized},
		"with a send-only key":        {acmeSend, "", "", http.StatusForbidden},
	} {
		_, got := b.subscribers(t, c.key, c.query)
		require.Equal(t, c.status, got.status, "%s: %s", name, got.body)
		require.Equal(t, "application/problem+json", got.header.Get("Content-Type"), name)
		require.Contains(t, got.body, c.names, name)
	}
}

func TestSubscriberListingWithoutAnIndexIsUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	_, got := b.subscribers(t, acmeRead, "")
	require.Equal(t, http.StatusServiceUnavailable, got.status, got.body)
	require.Contains(t, got.body, "history.url")
}
