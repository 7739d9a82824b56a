// Package inboxweb serves <herald-inbox>, the web component a tenant drops
// into its own web app to show a subscriber's in-app inbox: a bell with the
// unread count, a panel with the feed, live over Server-Sent Events. It is
// one script (herald-inbox.js, embedded in the binary), with no framework,
// no build step and nothing fetched from anywhere but Herald's API, because
// it runs inside other people's pages: it must not bring their users a
// third party, nor need a toolchain to change.
//
// The script is served twice: at Path, a stable name a tenant can paste
// (cached for five minutes, so a new release reaches pages soon), and at
// VersionedPath, whose name carries the hash of the content (cached for a
// year, immutable: a page that pins it never sees the script change under
// it). Both answer any origin, since the pages that load them are the
// tenants', not Herald's.
package inboxweb

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"time"
)

// Path is the script's stable address.
const Path = "/v1/inbox/herald-inbox.js"

//go:embed herald-inbox.js
var script []byte

var (
	sum     = sha256.Sum256(script)
	version = hex.EncodeToString(sum[:])[:12]
	etag    = `"` + hex.EncodeToString(sum[:]) + `"`
)

// VersionedPath is the script's address named for its content: the first
// 12 hex digits of its SHA-256.
func VersionedPath() string { return "/v1/inbox/herald-inbox-" + version + ".js" }

// Paths are the addresses Handler answers, to mount as GET routes.
func Paths() []string { return []string{Path, VersionedPath()} }

// Cache lifetimes: the stable name is revalidated soon after a release;
// the versioned one never changes.
const (
	stableCache    = "public, max-age=300"
	versionedCache = "public, max-age=31536000, immutable"
)

// Handler answers GET and HEAD for Paths, with an ETag (a conditional
// request gets 304), and 404 for any other path: an old version's name
// included, since its content is no longer here.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cache string
		switch r.URL.Path {
		case Path:
			cache = stableCache
		case VersionedPath():
			cache = versionedCache
		default:
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", cache)
		h.Set("ETag", etag)
		// Pages on any origin load it: a module import needs CORS, a page
		// isolated with COEP needs the resource policy.
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
		http.ServeContent(w, r, "herald-inbox.js", time.Time{}, bytes.NewReader(script))
	})
}
