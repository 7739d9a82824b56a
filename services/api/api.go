package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/dlq"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/erasure"
	"github.com/heraldhq/herald/shared/inbox"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/recipient"
	records "github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/suppression"
	"github.com/heraldhq/herald/shared/templates"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/shared/webhooks"
)

// Version is the API's version in its OpenAPI document.
const Version = "1.0.0"

// natsTimeout bounds each round trip to NATS within a request, so a request
// answers 503 while NATS is unreachable rather than wait for it.
const natsTimeout = 5 * time.Second

// retryAfter is what a 503 asks the caller to wait, in seconds: about how
// long NATS clients take to find a restarted server again.
const retryAfter = 5

// Service is the HTTP API. Handler serves it; Start binds the buckets it
// reads and writes, and until then every protected route answers 503.
type Service struct {
	cfg     Config
	js      jetstream.JetStream
	mux     *http.ServeMux
	api     huma.API
	metrics metrics
	stores  atomic.Pointer[stores]
}

// stores are the buckets the routes use, bound by Start.
type stores struct {
	idempotency  *idempotency
	ledger       *ledger.Ledger
	tenants      *tenant.Registry
	keys         *apikey.Keys
	vault        *vault.Store
	dlq          *dlq.Entries
	documents    *documents.Store
	webhooks     *webhooks.Store
	suppressions *suppression.Store
	domains      *domains.Store
	templates    *templates.Store
	recipients   *recipient.Directory
	// eraser is nil without a link secret (Config.Erasure).
	eraser *erasure.Eraser
	runs   *workflow.Runs
	// workflows are the tenants' own (router.Workflows).
	workflows *records.Store[router.Workflow]
	// inbox and hub are nil without Config.InboxTokens.
	inbox *inbox.Store
	hub   *hub
}

// routes registers every resource; one file holds each.
var routes = []func(*Service){registerEvents, registerNotifications, registerJobs, registerRetry, registerDLQ,
	registerTenants, registerKeys, registerProviders, registerWebhooks, registerSuppressions, registerDomains, registerTemplates, registerUsage,
	registerSubscriberList, registerSubscriberErasure, registerSubscribers, registerDevices, registerAccounts, registerTopics, registerPreferences,
	registerRuns, registerWorkflows, registerInbox}

// New returns the HTTP API on js.
func New(js jetstream.JetStream, cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Authenticator == nil {
		return nil, errors.New("api: an Authenticator is required")
	}
	m, err := newMetrics(cfg.MeterProvider, cfg.Tenants)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, js: js, mux: http.NewServeMux(), metrics: m}
	s.api = humago.New(s.mux, humaConfig())
	s.api.UseMiddleware(s.trace, s.measure, s.capBody, s.authenticate, s.admitSubscriber, s.limitRate)
	for _, register := range routes {
		register(s)
	}
	documentErrorHeaders(s.api.OpenAPI())
	s.mux.HandleFunc("/v1/", s.noRoute)
	return s, nil
}

// noRoute answers what no route serves as every other error is answered,
// with a problem: 405 with Allow when the path has routes for other
// methods, else 404.
func (s *Service) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		other := r.Clone(r.Context())
		other.Method = m
		if _, pattern := s.mux.Handler(other); pattern != "/v1/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	status, detail := http.StatusNotFound, "no route "+r.URL.Path
	if len(allow) > 0 {
		status, detail = http.StatusMethodNotAllowed, r.Method+" is not served on "+r.URL.Path
		w.Header().Set("Allow", strings.Join(allow, ", "))
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(huma.NewError(status, detail))
}

// documentErrorHeaders adds to every route's 401 and 503 the header that
// comes with them, which huma's error responses do not declare.
func documentErrorHeaders(doc *huma.OpenAPI) {
	headers := map[string]map[string]*huma.Param{
		"401": {"WWW-Authenticate": {Description: "Bearer: send an API key.", Schema: &huma.Schema{Type: "string"}}},
		"503": {"Retry-After": {Description: "Seconds to wait before trying again.", Schema: &huma.Schema{Type: "integer"}}},
		"429": {
			"Retry-After":      {Description: "Seconds until the plan's rate allows one more request.", Schema: &huma.Schema{Type: "integer"}},
			"RateLimit-Policy": {Description: `The plan's rate, per the IETF RateLimit fields: "<plan>";q=<burst>;w=<seconds>.`, Schema: &huma.Schema{Type: "string"}},
			"RateLimit":        {Description: `Where the tenant stands: "<plan>";r=<remaining>;t=<seconds until the burst is back>.`, Schema: &huma.Schema{Type: "string"}},
		},
	}
	for _, path := range doc.Paths {
		for _, op := range []*huma.Operation{path.Get, path.Post, path.Put, path.Patch, path.Delete} {
			if op == nil {
				continue
			}
			for status, h := range headers {
				if r := op.Responses[status]; r != nil {
					r.Headers = h
				}
			}
		}
	}
}

// humaConfig is huma's default less what a public API should not serve
// (an HTML docs page loading scripts from a CDN, $schema links in every
// answer), with the bearer scheme every protected route names.
func humaConfig() huma.Config {
	c := huma.DefaultConfig("Herald", Version)
	c.Info.Description = "Herald's public API: publish events, follow notifications. " +
		"Authenticate with an API key: Authorization: Bearer hk_…"
	c.OpenAPIPath = "/v1/openapi"
	c.DocsPath, c.SchemasPath = "", ""
	c.CreateHooks = nil
	c.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		bearer: {Type: "http", Scheme: "bearer", Description: "An API key, hk_…; its scopes (send, read, admin) decide what it may do."},
	}
	return c
}

// Handler serves every route under /v1/, and the OpenAPI document at
// /v1/openapi.json.
func (s *Service) Handler() http.Handler { return s.mux }

// Start binds the buckets and streams the routes use, which streams.Apply
// creates.
func (s *Service) Start(ctx context.Context) error {
	st, err := s.open(ctx)
	if err != nil {
		return fmt.Errorf("api: %w", err)
	}
	if s.cfg.Planner != nil {
		if err := s.cfg.Planner.Start(ctx); err != nil {
			return fmt.Errorf("api: planning events: %w", err)
		}
	}
	s.stores.Store(st)
	return nil
}

func (s *Service) open(ctx context.Context) (*stores, error) {
	kv, err := s.js.KeyValue(ctx, IdempotencyBucket)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", IdempotencyBucket, err)
	}
	st := &stores{idempotency: &idempotency{kv: kv, ttl: s.cfg.IdempotencyTTL, now: time.Now}}
	if st.ledger, err = ledger.Open(ctx, s.js); err != nil {
		return nil, err
	}
	if st.tenants, err = tenant.Open(ctx, s.js, s.cfg.Plans); err != nil {
		return nil, err
	}
	if st.keys, err = apikey.Open(ctx, s.js); err != nil {
		return nil, err
	}
	if st.vault, err = vault.Open(ctx, s.js, s.cfg.Keyring); err != nil {
		return nil, err
	}
	if st.dlq, err = dlq.OpenEntries(ctx, s.js); err != nil {
		return nil, err
	}
	if st.documents, err = documents.Open(ctx, s.js); err != nil {
		return nil, err
	}
	if st.webhooks, err = webhooks.Open(ctx, s.js, s.cfg.Keyring); err != nil {
		return nil, err
	}
	if st.suppressions, err = suppression.Open(ctx, s.js); err != nil {
		return nil, err
	}
	if st.domains, err = domains.Open(ctx, s.js); err != nil {
		return nil, err
	}
	if st.workflows, err = records.Open(ctx, s.js, router.Workflows); err != nil {
		return nil, err
	}
	if st.templates, err = templates.Open(ctx, s.js); err != nil {
		return nil, err
	}
	if err := s.openErasure(ctx, st); err != nil {
		return nil, err
	}
	if st.runs, err = workflow.OpenRuns(ctx, s.js); err != nil {
		return nil, err
	}
	return st, s.openInbox(ctx, st)
}

// Stop makes protected routes answer 503. Requests in flight finish; the
// HTTP server that serves Handler drains them.
func (s *Service) Stop(context.Context) error {
	if st := s.stores.Swap(nil); st != nil && st.hub != nil {
		st.hub.close()
	}
	if s.cfg.Planner != nil {
		s.cfg.Planner.Stop()
	}
	return nil
}

// ready returns the stores, or a 503 before Start, after Stop, and while
// the NATS connection is down — a request would wait for it in vain.
func (s *Service) ready() (*stores, error) {
	st := s.stores.Load()
	switch {
	case st == nil:
		return nil, unavailable("the API is not serving yet")
	case s.js.Conn().Status() != nats.CONNECTED:
		return nil, unavailable("NATS is unreachable")
	}
	return st, nil
}

// unavailable is a 503 that says when to try again, and that nothing was
// done.
func unavailable(why string) error {
	return huma.ErrorWithHeaders(huma.Error503ServiceUnavailable(why+"; nothing was done, try again"),
		http.Header{"Retry-After": {strconv.Itoa(retryAfter)}})
}

// writeUnavailable answers a 503 from a middleware.
func (s *Service) writeUnavailable(ctx huma.Context, why string) {
	ctx.SetHeader("Retry-After", strconv.Itoa(retryAfter))
	_ = huma.WriteErr(s.api, ctx, http.StatusServiceUnavailable, why+"; nothing was done, try again")
}

// capBody refuses a body whose declared length is over the cap, before a
// byte of it is read: the operation's own when it takes more (an import),
// else api.max_body_bytes. A body sent without a length (chunked) is cut by
// huma at the operation's MaxBodyBytes (bodyLimit), in its own words.
func (s *Service) capBody(ctx huma.Context, next func(huma.Context)) {
	limit, setting := s.cfg.MaxBodyBytes, " (api.max_body_bytes)"
	if op := ctx.Operation(); op != nil && op.MaxBodyBytes > s.bodyLimit() {
		limit, setting = op.MaxBodyBytes-1, " on this route"
	}
	n, err := strconv.ParseInt(ctx.Header("Content-Length"), 10, 64)
	if err == nil && n > limit {
		_ = huma.WriteErr(s.api, ctx, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the body is larger than %d bytes%s", limit, setting))
		return
	}
	next(ctx)
}

// bodyLimit is the MaxBodyBytes of operations that take a body: huma
// refuses a body that reaches its limit, so one byte over the cap.
func (s *Service) bodyLimit() int64 { return s.cfg.MaxBodyBytes + 1 }
