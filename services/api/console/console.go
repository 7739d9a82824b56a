// Package console is the operators' web console, served by the API
// service under /console/ on the public listener: the live flow through
// the streams, the DLQ (look, pick, redrive, purge), workflow runs (look,
// cancel), and more pages as they come. Pages are server-rendered
// html/template with a little JavaScript (the flow's live updates)
// embedded in the binary: nothing to build, nothing fetched from
// elsewhere, usable without JavaScript.
//
// Operators sign in with an admin API key (or an observer key, which
// sees everything and changes nothing), exchanged for a session cookie
// (HttpOnly, SameSite=Strict, Secure outside dev) whose session lives in
// the KV bucket console_sessions, so any API replica answers it. A session
// lasts as long as its key: each request asks the API's Authenticator
// whether the key is still live, so revoking it ends its sessions as soon
// as the API refuses the key itself. Every
// form carries the session's CSRF token; every action is written to the
// AUDIT stream (who, what, when, and how it ended).
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/streams"
)

// Path is where the console is served.
const Path = "/console/"

// Keys is what the console asks of the API keys: the API's own
// (api.StoredKeys), so a revocation reaches the console's sessions as soon
// as it reaches the API.
type Keys interface {
	// Authenticate turns the key given at sign-in into its principal.
	api.Authenticator
	// Active is the principal of the key with this id while it is live,
	// asked before each request of a session opened with it: an error
	// wrapping api.ErrInvalidKey once it is revoked, any other when the
	// keys cannot be checked.
	Active(ctx context.Context, keyID string) (api.Principal, error)
}

// Config is what the console needs.
type Config struct {
	// Keys turns an admin API key into its principal, and says while a
	// session's key is live: the API's own.
	Keys Keys
	// Streams adjust the declarations to the deployment, as streams
	// apply does: the Streams page compares the server with them.
	Streams streams.Options
	// Secure marks the session cookie Secure: true except in dev, whose
	// console is plain http on loopback.
	Secure bool
	// SessionTTL is how long a session lasts without a new sign-in.
	// Defaults to 8h; at most 12h (the bucket's max age).
	SessionTTL time.Duration
	// History is the notification index the Notifications page searches:
	// the API's own. Nil (history.url unset): no search, only a
	// notification looked up by its id in the ledger.
	History api.History
	// Retry sends a failed notification back to delivery:
	// api.Service.Retry. Nil: the console offers no retry.
	Retry func(ctx context.Context, tenant, id string) (api.Notification, error)
	// Links signs document download links, as emails carry them. Nil (no
	// link secret configured): no link is offered.
	Links *documents.Signer
	// Plans are the plans tenants may be on (the config file's plans:,
	// over the built-in ones), for their limits. Defaults to
	// tenant.BuiltinPlans.
	Plans tenant.Plans
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

// Console serves the console's pages.
type Console struct {
	cfg      Config
	js       jetstream.JetStream
	mux      *http.ServeMux
	pages    *template.Template
	sessions *sessions
	audit    *audit
	dlq      *dlq.Entries
	ledger   *ledger.Ledger
	tenants  *tenantStores
	runs     *workflow.Runs
}

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// New makes the console; Start opens what it reads.
func New(js jetstream.JetStream, cfg Config) (*Console, error) {
	if cfg.Keys == nil {
		return nil, errors.New("console: Keys is required")
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = 8 * time.Hour
	}
	if cfg.SessionTTL < time.Minute || cfg.SessionTTL > sessionMaxAge {
		return nil, fmt.Errorf("console: session TTL %s must be between 1m and %s", cfg.SessionTTL, sessionMaxAge)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Plans = cfg.Plans.WithDefaults()
	pages, err := template.New("").Funcs(funcs).ParseFS(templateFiles, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	c := &Console{cfg: cfg, js: js, mux: http.NewServeMux(), pages: pages}
	c.routes()
	return c, nil
}

// Start opens the sessions bucket, the audit stream, the DLQ, the ledger
// and what the tenants pages read.
func (c *Console) Start(ctx context.Context) error {
	kv, err := c.js.KeyValue(ctx, SessionsBucket)
	if err != nil {
		return fmt.Errorf("console: sessions bucket %s: %w", SessionsBucket, err)
	}
	c.sessions = &sessions{kv: kv, ttl: c.cfg.SessionTTL, now: c.cfg.Now}
	c.audit = &audit{js: c.js, now: c.cfg.Now, logger: c.cfg.Logger}
	if c.dlq, err = dlq.OpenEntries(ctx, c.js); err != nil {
		return fmt.Errorf("console: %w", err)
	}
	if c.ledger, err = ledger.Open(ctx, c.js); err != nil {
		return fmt.Errorf("console: %w", err)
	}
	if c.tenants, err = openTenantStores(ctx, c.js, c.cfg.Plans); err != nil {
		return fmt.Errorf("console: %w", err)
	}
	if c.runs, err = workflow.OpenRuns(ctx, c.js); err != nil {
		return fmt.Errorf("console: %w", err)
	}
	return nil
}

// Handler serves everything under Path.
func (c *Console) Handler() http.Handler { return securityHeaders(c.mux) }

func (c *Console) routes() {
	static, _ := fs.Sub(staticFiles, "static")
	c.mux.Handle("GET "+Path+"static/", http.StripPrefix(Path+"static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET "+Path+"signin", c.signInPage)
	c.mux.HandleFunc("POST "+Path+"signin", c.signIn)
	c.mux.Handle("POST "+Path+"signout", c.signOutAction(c.signOut))
	c.mux.Handle("GET "+Path+"{$}", c.page(func(w http.ResponseWriter, r *http.Request, s *session) {
		http.Redirect(w, r, Path+"flow", http.StatusSeeOther)
	}))
	c.mux.Handle("GET "+Path+"flow", c.page(c.flowPage))
	c.mux.Handle("GET "+Path+"flow/live", c.page(c.flowLive))
	c.mux.Handle("GET "+Path+"dlq", c.page(c.dlqPage))
	c.mux.Handle("GET "+Path+"dlq/{seq}", c.page(c.dlqEntryPage))
	c.mux.Handle("POST "+Path+"dlq/redrive", c.action(c.dlqRedrive))
	c.mux.Handle("POST "+Path+"dlq/purge", c.action(c.dlqPurge))
	c.mux.Handle("GET "+Path+"streams", c.page(c.streamsPage))
	c.mux.Handle("GET "+Path+"notifications", c.page(c.notificationsPage))
	c.mux.Handle("GET "+Path+"notifications/{id}", c.page(c.notificationPage))
	c.mux.Handle("POST "+Path+"notifications/{id}/retry", c.action(c.notificationRetry))
	c.mux.Handle("GET "+Path+"runs", c.page(c.runsPage))
	c.mux.Handle("GET "+Path+"runs/{id}", c.page(c.runPage))
	c.mux.Handle("POST "+Path+"runs/{id}/cancel", c.action(c.runCancel))
	c.mux.Handle("GET "+Path+"tenants", c.page(c.tenantsPage))
	c.mux.Handle("GET "+Path+"tenants/{id}", c.page(c.tenantPage))
	c.mux.Handle("POST "+Path+"tenants/{id}/keys", c.action(c.createKey))
	c.mux.Handle("GET "+Path+"tenants/{id}/keys/{key}/revoke", c.page(c.revokeKeyPage))
	c.mux.Handle("POST "+Path+"tenants/{id}/keys/{key}/revoke", c.action(c.revokeKey))
	c.mux.HandleFunc(Path, func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, nil, http.StatusNotFound, "There is no such page.")
	})
}

// securityHeaders keeps the pages from being framed, sniffed or made to
// run anything but their own script.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// view is what every page's template gets.
type view struct {
	Title   string
	Nav     string
	Session *session
	Notice  string
	Data    any
}

func (c *Console) render(w http.ResponseWriter, status int, name string, v view) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := c.pages.ExecuteTemplate(w, name, v); err != nil {
		c.cfg.Logger.Error("console: rendering a page", "page", name, "error", err)
	}
}

// fail answers with an error page, signed in or not.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, status int, msg string) {
	c.render(w, status, "error.html", view{Title: http.StatusText(status), Session: s, Data: msg})
}

var funcs = template.FuncMap{
	"since": func(t time.Time) string { return time.Since(t).Round(time.Second).String() },
	"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	// consumerID identifies a consumer's row for the live updates.
	"consumerID": func(stream, consumer string) string { return stream + "/" + consumer },
}
