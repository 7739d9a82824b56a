package unsubscribe_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/event"
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

type store struct {
	mu    sync.Mutex
	added []suppression.Entry
	fail  error
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

func serve(t *testing.T, st *store) (*unsubscribe.Signer, string) {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s, err := unsubscribe.NewSigner(secret, srv.URL)
	require.NoError(t, err)
	h := unsubscribe.Handler(st, s, slog.New(slog.DiscardHandler))
	mux.Handle("GET "+unsubscribe.Path+"{token}", h)
	mux.Handle("POST "+unsubscribe.Path+"{token}", h)
	return s, srv.URL
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
