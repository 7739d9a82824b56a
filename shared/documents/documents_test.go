package documents_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/notification"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

var secret = bytes.Repeat([]byte("k"), 32)

func TestObjectName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "acme/PO-2026-0042/purchase_order-r2.pdf", documents.ObjectName("acme", "PO-2026-0042", "purchase_order", 2))
}

func TestStorePutIsIdempotentAndGetChecksTheDigest(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	store, err := documents.Open(ctx, n.JS)
	require.NoError(t, err)

	name := documents.ObjectName("acme", "PO-1", "invoice", 1)
	ref, err := store.Put(ctx, name, "invoice", []byte("%PDF-1.7 one"))
	require.NoError(t, err)
	require.Equal(t, "invoice", ref.Type)
	require.Equal(t, int64(12), ref.Size)
	require.Len(t, ref.SHA256, 64)

	obj, err := n.JS.ObjectStore(ctx, documents.Bucket)
	require.NoError(t, err)
	before, err := obj.GetInfo(ctx, name)
	require.NoError(t, err)
	again, err := store.Put(ctx, name, "invoice", []byte("%PDF-1.7 one"))
	require.NoError(t, err)
	require.Equal(t, ref, again)
	after, err := obj.GetInfo(ctx, name)
	require.NoError(t, err)
	require.Equal(t, before.NUID, after.NUID, "the same bytes are not stored twice")

	got, err := store.Get(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, []byte("%PDF-1.7 one"), got)

	stale := ref
	stale.SHA256 = strings.Repeat("0", 64)
	_, err = store.Get(ctx, stale)
	require.ErrorIs(t, err, documents.ErrDigestMismatch)
	_, err = store.Get(ctx, notification.Document{Object: "acme/none.pdf"})
	require.ErrorIs(t, err, documents.ErrNotFound)
}

func TestSignedLinks(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	store, err := documents.Open(ctx, n.JS)
	require.NoError(t, err)
	name := documents.ObjectName("acme", "PO/2026 #7", "invoice", 1)
	_, err = store.Put(ctx, name, "invoice", []byte("%PDF-1.7 signed"))
	require.NoError(t, err)

	mux := http.NewServeMux()
	signer, err := documents.NewSigner(secret, "http://herald.test", time.Hour)
	require.NoError(t, err)
	mux.Handle("GET "+documents.LinkPath+"{name...}", documents.Handler(store, signer, slog.New(slog.DiscardHandler)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	at := func(link string) string { return srv.URL + strings.TrimPrefix(link, "http://herald.test") }
	get := func(u string) (int, string) {
		resp, err := heraldtest.HTTPClient(t).Get(u)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	now := time.Now()
	link, expires := signer.Link(name, now)
	require.Equal(t, now.Add(time.Hour).Truncate(time.Second), expires, "the signer's TTL, to the second the link carries")
	status, body := get(at(link))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "%PDF-1.7 signed", body)

	expired, _ := signer.Link(name, time.Now().Add(-2*time.Hour))
	status, _ = get(at(expired))
	require.Equal(t, http.StatusForbidden, status, "expired")

	u, err := url.Parse(at(link))
	require.NoError(t, err)
	q := u.Query()
	q.Set("expires", "99999999999")
	u.RawQuery = q.Encode()
	status, _ = get(u.String())
	require.Equal(t, http.StatusForbidden, status, "expiry altered")

	other, _ := signer.Link(documents.ObjectName("acme", "PO-2", "invoice", 1), time.Now())
	u2, err := url.Parse(at(other))
	require.NoError(t, err)
	u.RawQuery = u2.RawQuery
	status, _ = get(u.String())
	require.Equal(t, http.StatusForbidden, status, "another document's signature")

	otherSigner, err := documents.NewSigner(bytes.Repeat([]byte("x"), 32), "http://herald.test", time.Hour)
	require.NoError(t, err)
	forged, _ := otherSigner.Link(name, time.Now())
	status, _ = get(at(forged))
	require.Equal(t, http.StatusForbidden, status, "signed with another secret")

	gone, _ := signer.Link("acme/none.pdf", time.Now())
	status, _ = get(at(gone))
	require.Equal(t, http.StatusNotFound, status)
}

func TestNewSignerRefusesWeakSettings(t *testing.T) {
	t.Parallel()
	_, err := documents.NewSigner([]byte("short"), "https://h.example", time.Hour)
	require.ErrorContains(t, err, "at least 32 bytes")
	_, err = documents.NewSigner(secret, "herald.example", time.Hour)
	require.ErrorContains(t, err, "not a base URL")
}
