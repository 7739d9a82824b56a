package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/services/api/inboxweb"
	"github.com/heraldhq/herald/shared/inbox"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/tenant"
)

// subscriberScheme is the OpenAPI security scheme of the inbox's browser
// routes: a subscriber token, never an API key.
const subscriberScheme = "subscriber"

// bySubscriber is the security requirement of a browser route.
var bySubscriber = []map[string][]string{{subscriberScheme: {}}}

// streamOperation is the one browser route that also takes its token in
// the query, for EventSource, which cannot send headers.
const streamOperation = "inbox-stream"

// refusedToken is every refused token's answer, whatever the reason, so
// that it tells its holder nothing.
const refusedToken = "the subscriber token is not accepted; mint a new one"

type subscriberKey struct{}

// feed is the subscriber a browser route serves, as its token names it.
type feed struct{ tenant, sub string }

func inboxFeed(ctx context.Context) feed {
	f, _ := ctx.Value(subscriberKey{}).(feed)
	return f
}

// InboxToken is a subscriber token and when it expires.
type InboxToken struct {
	Token     string    `json:"token" doc:"Give it to the subscriber's browser: <herald-inbox token=\"…\">. It opens that subscriber's inbox only."`
	ExpiresAt time.Time `json:"expires_at"`
}

// NewInboxToken is whose token to mint, and for how long.
type NewInboxToken struct {
	Subscriber string `json:"subscriber" doc:"The subscriber's id, as events name it."`
	TTL        string `json:"ttl,omitempty" example:"1h" doc:"How long the token opens the inbox, a Go duration from 1m to 24h. Defaults to 1h."`
}

type mintInboxTokenInput struct{ Body NewInboxToken }

type inboxTokenOutput struct{ Body InboxToken }

// VAPIDKey is the Web Push public key.
type VAPIDKey struct {
	PublicKey string `json:"public_key" doc:"The VAPID public key (base64url, uncompressed P-256 point): pushManager.subscribe's applicationServerKey."`
}

type vapidOutput struct {
	AllowOrigin string `header:"Access-Control-Allow-Origin"`
	Body        VAPIDKey
}

func registerInbox(s *Service) {
	s.api.OpenAPI().Components.SecuritySchemes[subscriberScheme] = &huma.SecurityScheme{
		Type: "http", Scheme: "bearer",
		Description: "A subscriber token (hit1.…) minted by POST /v1/inbox/tokens; it opens one subscriber's inbox. API keys are not accepted here.",
	}
	huma.Register(s.api, huma.Operation{
		OperationID: "mint-inbox-token", Method: http.MethodPost, Path: "/v1/inbox/tokens",
		Summary:     "Mint a subscriber token",
		Description: "A token for one subscriber of the key's tenant, for the browser: the inbox routes take it instead of an API key.",
		Tags:        []string{"Inbox"}, Security: needs(ScopeSend), MaxBodyBytes: s.bodyLimit(),
		Errors: []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
	}, s.mintInboxToken)
	huma.Register(s.api, huma.Operation{
		OperationID: "get-vapid-public-key", Method: http.MethodGet, Path: "/v1/inbox/vapid-public-key",
		Summary: "The Web Push public key", Description: "Public, for any page (CORS *). 404 when Web Push is not configured.",
		Tags: []string{"Inbox"}, Errors: []int{http.StatusNotFound},
	}, s.vapidPublicKey)
	registerInboxRoutes(s)
	for _, p := range inboxweb.Paths() {
		s.mux.Handle("GET "+p, inboxweb.Handler())
	}
	s.mux.HandleFunc("OPTIONS /v1/inbox/", preflight)
}

func (s *Service) mintInboxToken(ctx context.Context, in *mintInboxTokenInput) (*inboxTokenOutput, error) {
	if s.cfg.InboxTokens == nil {
		return nil, unavailable("the inbox is not configured (no token secret)")
	}
	p := principal(ctx)
	if p.Tenant == "" {
		return nil, huma.Error403Forbidden("an admin key belongs to no tenant: mint with a key of the subscriber's tenant")
	}
	var problems []error
	if err := recipient.CheckID(in.Body.Subscriber); err != nil {
		problems = append(problems, &huma.ErrorDetail{Location: "body.subscriber", Value: in.Body.Subscriber,
			Message: "the subscriber id " + err.Error()})
	}
	ttl, err := tokenTTL(in.Body.TTL)
	if err != nil {
		problems = append(problems, &huma.ErrorDetail{Location: "body.ttl", Value: in.Body.TTL, Message: err.Error()})
	}
	if len(problems) > 0 {
		return nil, huma.Error422UnprocessableEntity("the token cannot be minted", problems...)
	}
	token, expires, err := s.cfg.InboxTokens.Mint(p.Tenant, in.Body.Subscriber, ttl, time.Now())
	if err != nil {
		return nil, huma.Error422UnprocessableEntity(err.Error())
	}
	return &inboxTokenOutput{Body: InboxToken{Token: token, ExpiresAt: expires.UTC()}}, nil
}

// tokenTTL is the ttl field as a lifetime: the default when empty, else a
// Go duration within the tokens' bounds.
func tokenTTL(s string) (time.Duration, error) {
	if s == "" {
		return inbox.DefaultTokenTTL, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < inbox.MinTokenTTL || d > inbox.MaxTokenTTL {
		return 0, huma.Error422UnprocessableEntity("ttl is a duration from 1m to 24h, such as 1h or 30m")
	}
	return d, nil
}

func (s *Service) vapidPublicKey(context.Context, *struct{}) (*vapidOutput, error) {
	if s.cfg.VAPIDPublicKey == "" {
		return nil, huma.Error404NotFound("Web Push is not configured")
	}
	return &vapidOutput{AllowOrigin: "*", Body: VAPIDKey{PublicKey: s.cfg.VAPIDPublicKey}}, nil
}

// preflight answers a browser's CORS preflight of a browser route. It
// carries no token, so it cannot know the tenant: it allows the origin
// that asks, and the actual request is checked against the tenant's
// origins.
func preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Add("Vary", "Origin")
	if o := r.Header.Get("Origin"); o != "" {
		h.Set("Access-Control-Allow-Origin", o)
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
		h.Set("Access-Control-Allow-Methods", "GET, POST")
		h.Set("Access-Control-Max-Age", "600")
	}
	w.WriteHeader(http.StatusNoContent)
}

// admitSubscriber is the middleware of the browser routes: a subscriber
// token (401 otherwise, the same answer for every reason), then the
// page's origin, which must be one of the token's tenant's inbox origins
// (403, nothing done). A request without an Origin (a server, curl) is
// served.
func (s *Service) admitSubscriber(ctx huma.Context, next func(huma.Context)) {
	if !forSubscribers(ctx.Operation()) {
		next(ctx)
		return
	}
	st, err := s.ready()
	if err != nil || s.cfg.InboxTokens == nil || st.inbox == nil {
		s.writeUnavailable(ctx, "the inbox is not serving")
		return
	}
	origin := ctx.Header("Origin")
	if origin != "" {
		ctx.AppendHeader("Vary", "Origin")
	}
	f, ok := s.verifySubscriber(ctx)
	if !ok {
		if origin != "" {
			// The page must be able to read the 401 to renew its token.
			ctx.SetHeader("Access-Control-Allow-Origin", origin)
		}
		s.metrics.authFailure(ctx.Context(), "subscriber")
		ctx.SetHeader("WWW-Authenticate", "Bearer")
		_ = huma.WriteErr(s.api, ctx, http.StatusUnauthorized, refusedToken)
		return
	}
	if origin != "" {
		allowed, err := s.originAllowed(ctx.Context(), st, f.tenant, origin)
		if err != nil {
			s.writeUnavailable(ctx, "the tenant registry cannot be read right now")
			return
		}
		if !allowed {
			_ = huma.WriteErr(s.api, ctx, http.StatusForbidden, "this page's origin is not one of the tenant's inbox_origins")
			return
		}
		ctx.SetHeader("Access-Control-Allow-Origin", origin)
	}
	noteTenant(ctx.Context(), f.tenant)
	next(huma.WithValue(ctx, subscriberKey{}, f))
}

func forSubscribers(op *huma.Operation) bool {
	return slices.ContainsFunc(op.Security, func(req map[string][]string) bool { _, ok := req[subscriberScheme]; return ok })
}

// verifySubscriber is the feed the request's token opens. The stream also
// takes ?token=, since EventSource cannot send an Authorization header.
func (s *Service) verifySubscriber(ctx huma.Context) (feed, bool) {
	token, ok := bearerToken(ctx.Header("Authorization"))
	if !ok && ctx.Operation().OperationID == streamOperation {
		token, ok = ctx.Query("token"), ctx.Query("token") != ""
	}
	if !ok {
		return feed{}, false
	}
	tenant, sub, err := s.cfg.InboxTokens.Verify(token, time.Now())
	return feed{tenant: tenant, sub: sub}, err == nil
}

// originAllowed says whether origin is one of the tenant's inbox origins;
// a tenant no longer registered allows none.
func (s *Service) originAllowed(ctx context.Context, st *stores, tenantID, origin string) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	t, err := st.tenants.Get(cctx, tenantID)
	if err != nil {
		if errors.Is(err, tenant.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	return slices.Contains(t.InboxOrigins, origin), nil
}

// retryIn is a refusal that says when to try again.
func retryIn(err huma.StatusError, seconds int) error {
	return huma.ErrorWithHeaders(err, http.Header{"Retry-After": {strconv.Itoa(seconds)}})
}
