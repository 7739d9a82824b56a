package inboxweb_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/api/inboxweb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func get(t *testing.T, path string, header http.Header) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	inboxweb.Handler().ServeHTTP(rec, req)
	return rec.Result()
}

// Both names serve the file in the package, as a script no browser sniffs,
// to any origin; the versioned one is cached for good, the stable one for
// five minutes.
func TestScriptIsServedUnderBothNames(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("herald-inbox.js")
	require.NoError(t, err)
	for path, cache := range map[string]string{
		inboxweb.Path:            "public, max-age=300",
		inboxweb.VersionedPath(): "public, max-age=31536000, immutable",
	} {
		res := get(t, path, nil)
		require.Equal(t, http.StatusOK, res.StatusCode, path)
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.Equal(t, string(want), string(body), path)
		require.Equal(t, "text/javascript; charset=utf-8", res.Header.Get("Content-Type"), path)
		require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"), path)
		require.Equal(t, cache, res.Header.Get("Cache-Control"), path)
		require.Equal(t, "*", res.Header.Get("Access-Control-Allow-Origin"), path)
		require.Equal(t, "cross-origin", res.Header.Get("Cross-Origin-Resource-Policy"), path)
	}
}

// The versioned name is the content's: a changed script gets a new name, so
// a year's cache never serves a stale one.
func TestVersionedPathIsTheContentsHash(t *testing.T) {
	t.Parallel()
	content, err := os.ReadFile("herald-inbox.js")
	require.NoError(t, err)
	sum := sha256.Sum256(content)
	require.Equal(t, "/v1/inbox/herald-inbox-"+hex.EncodeToString(sum[:])[:12]+".js", inboxweb.VersionedPath())
	require.Equal(t, []string{inboxweb.Path, inboxweb.VersionedPath()}, inboxweb.Paths())
}

// A browser that has the script revalidates it with its ETag and gets 304
// with no body.
func TestETagRevalidates(t *testing.T) {
	t.Parallel()
	first := get(t, inboxweb.Path, nil)
	etag := first.Header.Get("ETag")
	require.NotEmpty(t, etag)
	res := get(t, inboxweb.Path, http.Header{"If-None-Match": {etag}})
	require.Equal(t, http.StatusNotModified, res.StatusCode)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Empty(t, body)
	stale := get(t, inboxweb.Path, http.Header{"If-None-Match": {`"another"`}})
	require.Equal(t, http.StatusOK, stale.StatusCode)
}

// Any other version's name, or any other file, is not found: what it named
// is no longer here.
func TestUnknownNamesAreNotFound(t *testing.T) {
	t.Parallel()
	for _, path := range []string{
		"/v1/inbox/herald-inbox-000000000000.js",
		"/v1/inbox/herald-inbox.css",
		"/v1/inbox/counts",
	} {
		res := get(t, path, nil)
		require.Equal(t, http.StatusNotFound, res.StatusCode, path)
		require.Empty(t, res.Header.Get("Cache-Control"), path)
	}
}

func TestOnlyReads(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	inboxweb.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, inboxweb.Path, nil))
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
}
