package unsubscribe_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/erasure"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/suppression"
	"github.com/heraldhq/herald/shared/unsubscribe"
)

var secret = []byte(strings.Repeat("s", 32))

func TestALinkNamesWhatItUnsubscribesAndCannotBeAltered(t *testing.T) {
	t.Parallel()
	s, err := unsubscribe.NewSigner(secret, "https://herald.example.com/")
	require.NoError(t, err)
	link := s.Link(unsubscribe.Opt{Tenant: "acme", Category: "alerts", Address: "Olga@Zarya.example"})
	require.True(t, strings.HasPrefix(link, "https://herald.example.com/v1/unsubscribe/"), link)
	token := strings.TrimPrefix(link, "https://herald.example.com/v1/unsubscribe/")
	o, err := s.Verify(token)
	require.NoError(t, err)
	require.Equal(t, unsubscribe.Opt{Tenant: "acme", Category: "alerts", Address: "olga@zarya.example"}, o)

	other, err := unsubscribe.NewSigner([]byte(strings.Repeat("t", 32)), "https://herald.example.com")
	require.NoError(t, err)
	forged := strings.TrimPrefix(other.Link(unsubscribe.Opt{Tenant: "acme", Category: "alerts", Address: "x@zarya.example"}),
		"https://herald.example.com/v1/unsubscribe/")
	payload, sig, _ := strings.Cut(token, ".")
	for name, bad := range map[string]string{
		"another key":       forged,
		"no signature":      payload,
		"another payload":   strings.Split(forged, ".")[0] + "." + sig,
		"truncated":         token[:len(token)-2],
		"empty":             "",
		"signature of none": "." + sig,
	} {
		_, err := s.Verify(bad)
		require.ErrorIs(t, err, unsubscribe.ErrRefused, name)
	}

	_, err = unsubscribe.NewSigner([]byte("short"), "https://herald.example.com")
	require.Error(t, err)
	_, err = unsubscribe.NewSigner(secret, "herald.example.com")
	require.Error(t, err)
}

// token is the last segment of a link.
func token(link string) string { return link[strings.LastIndex(link, "/")+1:] }

// The links' key is derived from the secret they share with the document
// links, never the secret itself: a payload signed under the raw secret —
// as anything else keyed by that secret signs — is not a link.
func TestALinkSignedWithTheSharedSecretItselfIsRefused(t *testing.T) {
	t.Parallel()
	s, err := unsubscribe.NewSigner(secret, "https://herald.example.com")
	require.NoError(t, err)
	genuine := token(s.Link(unsubscribe.Opt{Tenant: "acme", Category: "alerts", Address: "olga@zarya.example"}))
	payload, _, _ := strings.Cut(genuine, ".")
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(payload))
	underTheSecret := payload + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))

	_, err = s.Verify(underTheSecret)
	require.ErrorIs(t, err, unsubscribe.ErrRefused)
	_, err = s.Verify(genuine)
	require.NoError(t, err)
}

// A link unsubscribes one address from one tenant's category: one signed
// without a tenant, an address or a valid category — an empty category
// would suppress every category — is refused although its signature holds,
// and a link for one tenant, address or category never verifies as
// another's.
func TestALinkIsForOneTenantAddressAndCategoryOnly(t *testing.T) {
	t.Parallel()
	s, err := unsubscribe.NewSigner(secret, "https://herald.example.com")
	require.NoError(t, err)
	olga := unsubscribe.Opt{Tenant: "acme", Category: "alerts", Address: "olga@zarya.example"}

	incomplete := map[string]unsubscribe.Opt{
		"no tenant":              {Category: "alerts", Address: "olga@zarya.example"},
		"no address":             {Tenant: "acme", Category: "alerts"},
		"a blank address":        {Tenant: "acme", Category: "alerts", Address: "  "},
		"no category":            {Tenant: "acme", Address: "olga@zarya.example"},
		"a category with a dot":  {Tenant: "acme", Category: "alerts.>", Address: "olga@zarya.example"},
		"a category too long":    {Tenant: "acme", Category: strings.Repeat("a", 65), Address: "olga@zarya.example"},
		"a category with spaces": {Tenant: "acme", Category: "all alerts", Address: "olga@zarya.example"},
	}
	for name, o := range incomplete {
		_, err := s.Verify(token(s.Link(o)))
		require.ErrorIs(t, err, unsubscribe.ErrRefused, name)
	}

	others := map[string]unsubscribe.Opt{
		"another tenant":   {Tenant: "globex", Category: olga.Category, Address: olga.Address},
		"another address":  {Tenant: olga.Tenant, Category: olga.Category, Address: "ivan@zarya.example"},
		"another category": {Tenant: olga.Tenant, Category: "marketing", Address: olga.Address},
	}
	_, sig, _ := strings.Cut(token(s.Link(olga)), ".")
	for name, other := range others {
		o, err := s.Verify(token(s.Link(other)))
		require.NoError(t, err, name)
		require.Equal(t, other, o, name)
		payload, _, _ := strings.Cut(token(s.Link(other)), ".")
		_, err = s.Verify(payload + "." + sig)
		require.ErrorIs(t, err, unsubscribe.ErrRefused, "olga's signature on %s", name)
	}
}

type store struct {
	mu    sync.Mutex
	added []suppression.Entry
	fail  error
	// optedOut are the subscribers' opt-outs, "tenant/subscriber/category";
	// gone, the subscribers the tenant no longer has.
	optedOut []string
	gone     map[string]bool
}

func (s *store) optOut(_ context.Context, tenant, subscriber, category string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone[subscriber] {
		return fmt.Errorf("subscriber %s: %w", subscriber, resource.ErrNotFound)
	}
	s.optedOut = append(s.optedOut, tenant+"/"+subscriber+"/"+category)
	return nil
}

func (s *store) Add(_ context.Context, e suppression.Entry) (suppression.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return suppression.Entry{}, s.fail
	}
	s.added = append(s.added, e)
	return e, nil
}

func (s *store) AddConcealed(ctx context.Context, e suppression.Entry, hash func(string) string) (suppression.Entry, error) {
	e.AddressHash, e.Address = hash(e.Address), ""
	return s.Add(ctx, e)
}

func serve(t *testing.T, st *store) (*unsubscribe.Signer, string) {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s, err := unsubscribe.NewSigner(secret, srv.URL)
	require.NoError(t, err)
	mount(mux, unsubscribe.Handler(st, st.optOut, erasure.Hasher(secret), s, slog.New(slog.DiscardHandler)))
	return s, srv.URL
}

func mount(mux *http.ServeMux, h http.Handler) {
	mux.Handle("GET "+unsubscribe.Path+"{token}", h)
	mux.Handle("POST "+unsubscribe.Path+"{token}", h)
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// Opening the link asks; a mail client's one-click POST (RFC 8058), or
// the page's button, unsubscribes — that category only.
func TestOneClickUnsubscribes(t *testing.T) {
	t.Parallel()
	st := &store{}
	s, _ := serve(t, st)
	link := s.Link(unsubscribe.Opt{Tenant: "acme", Category: "alerts", Address: "olga@zarya.example"})

	status, page := do(t, http.MethodGet, link, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "Stop sending alerts notifications from acme to <strong>olga@zarya.example</strong>?")
	require.Contains(t, page, `<form method="post">`)
	require.Empty(t, st.added, "a GET — a link scanner's — unsubscribes no one")

	status, page = do(t, http.MethodPost, link, "List-Unsubscribe=One-Click")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "You are unsubscribed")
	require.Len(t, st.added, 1)
	e := st.added[0]
	require.Equal(t, suppression.Entry{Tenant: "acme", Channel: event.ChannelEmail, Address: "olga@zarya.example", Category: "alerts",
		Reason: suppression.Unsubscribed, Source: "unsubscribe link"}, e)
}

func TestABadLinkOrAStoreDownChangesNothing(t *testing.T) {
	t.Parallel()
	st := &store{}
	s, base := serve(t, st)
	status, page := do(t, http.MethodPost, base+unsubscribe.Path+"bm90IGEgdG9rZW4.c2ln", "List-Unsubscribe=One-Click")
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, page, "This link does not work")

	st.fail = errors.New("nats: timeout")
	link := s.Link(unsubscribe.Opt{Tenant: "acme", Category: "alerts", Address: "olga@zarya.example"})
	status, page = do(t, http.MethodPost, link, "List-Unsubscribe=One-Click")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Contains(t, page, "try again")
	require.NotContains(t, page, "nats")
	require.Empty(t, st.added)
}

// An email to a subscriber names them in its link: unsubscribing is their
// preference (the category off for email), not a suppression of the
// address. Should the tenant no longer have them, the opt-out still holds,
// as a suppression of the address in the category, concealed as an
// erasure conceals: the keyed hash in the address's place.
func TestUnsubscribingASubscriberIsTheirPreference(t *testing.T) {
	t.Parallel()
	st := &store{gone: map[string]bool{"u-erased": true}}
	s, _ := serve(t, st)
	link := s.Link(unsubscribe.Opt{Tenant: "acme", Category: "alerts", Address: "olga@zarya.example", Subscriber: "u-olga"})
	status, page := do(t, http.MethodGet, link, "")
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, st.optedOut, "a GET — a link scanner's — unsubscribes no one")

	status, page = do(t, http.MethodPost, link, "List-Unsubscribe=One-Click")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "You are unsubscribed")
	require.Equal(t, []string{"acme/u-olga/alerts"}, st.optedOut)
	require.Empty(t, st.added, "no suppression: her preference says it")

	gone := s.Link(unsubscribe.Opt{Tenant: "acme", Category: "alerts", Address: "ivan@zarya.example", Subscriber: "u-erased"})
	status, _ = do(t, http.MethodPost, gone, "List-Unsubscribe=One-Click")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []suppression.Entry{{Tenant: "acme", Channel: event.ChannelEmail, AddressHash: erasure.Hasher(secret)("ivan@zarya.example"),
		Category: "alerts", Reason: suppression.Unsubscribed, Source: "unsubscribe link"}}, st.added)
}

// A link signed before links named subscribers — in mail already sent —
// still verifies and unsubscribes its address as it did.
func TestALinkSignedBeforeSubscribersStillWorks(t *testing.T) {
	t.Parallel()
	st := &store{}
	s, base := serve(t, st)
	// Signed by the previous release with this secret.
	old := "eyJ0IjoiYWNtZSIsImMiOiJhbGVydHMiLCJhIjoib2xnYUB6YXJ5YS5leGFtcGxlIn0.sewXf3WsJj5PuBE71cT-tNI5f56JzjocpBmvMVAUiOo"
	o, err := s.Verify(old)
	require.NoError(t, err)
	require.Equal(t, unsubscribe.Opt{Tenant: "acme", Category: "alerts", Address: "olga@zarya.example"}, o)
	status, _ := do(t, http.MethodPost, base+unsubscribe.Path+old, "List-Unsubscribe=One-Click")
	require.Equal(t, http.StatusOK, status)
	require.Len(t, st.added, 1)
	require.Empty(t, st.optedOut)
}

// An old link clicked after its subscriber was erased keeps her out of the
// category — the suppression blocks her address as any other — but the
// suppressions bucket holds her address in no revision: only the hash an
// erasure leaves, keyed from the link secret.
func TestUnsubscribingAnErasedSubscriberBringsNoAddressBack(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	supp, err := suppression.Open(ctx, n.JS)
	require.NoError(t, err)
	gone := func(context.Context, string, string, string) error {
		return fmt.Errorf("u-olga: %w", resource.ErrNotFound)
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s, err := unsubscribe.NewSigner(secret, srv.URL)
	require.NoError(t, err)
	mount(mux, unsubscribe.Handler(supp, gone, erasure.Hasher(secret), s, slog.New(slog.DiscardHandler)))

	link := s.Link(unsubscribe.Opt{Tenant: "acme", Category: "alerts", Address: "Olga@Zarya.example", Subscriber: "u-olga"})
	status, page := do(t, http.MethodPost, link, "List-Unsubscribe=One-Click")
	require.Equal(t, http.StatusOK, status, page)

	e, err := supp.Blocks(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "alerts")
	require.NoError(t, err, "her address stays out of the category")
	require.True(t, e.Concealed())
	require.Equal(t, erasure.Hasher(secret)("olga@zarya.example"), e.AddressHash)
	_, err = supp.Blocks(ctx, "acme", event.ChannelEmail, "olga@zarya.example", "orders")
	require.ErrorIs(t, err, suppression.ErrNotFound, "that category only")
	for _, m := range heraldtest.StreamMessages(t, n.JS, "KV_"+suppression.Bucket) {
		require.NotContains(t, strings.ToLower(string(m.Data)), "olga@zarya.example")
	}
}
