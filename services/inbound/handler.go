package inbound

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/heraldhq/herald/shared/report"
	"github.com/heraldhq/herald/shared/vault"
)

// Accounts are the tenants' own provider accounts (vault.Store).
type Accounts interface {
	Get(ctx context.Context, tenant, name string) (vault.Credential, error)
}

// Config configures the inbound webhooks. Each provider is taken only
// when something can verify it: the platform's key, or a tenant's account.
type Config struct {
	// JetStream stores the verified reports. Required.
	JetStream jetstream.Publisher
	// SendGridPublicKey verifies the platform account's Event Webhook: the
	// base64 DER key SendGrid shows beside "Signed Event Webhook".
	SendGridPublicKey string
	// SESTopics are the SNS topics (ARNs) the platform's SES events come
	// through. A message from any other topic is refused, however well
	// signed: anyone can make an SNS topic and point it here.
	SESTopics []string
	// TwilioAuthToken verifies the platform Twilio account's callbacks;
	// TwilioAccountSID, when set, must be the one they name.
	TwilioAuthToken  vault.Secret
	TwilioAccountSID string
	// Accounts verify the requests to a tenant's path. Without it, those
	// are refused.
	Accounts Accounts
	// PublicURL is Herald's public base URL as providers call it
	// (documents.public_url): Twilio signs the URL it called, which a
	// proxy in front of Herald hides.
	PublicURL string
	// MaxAge is how old a signed timestamp may be: an older request is a
	// replay, refused. Defaults to 5 minutes.
	MaxAge time.Duration
	// MaxBodyBytes caps a request body (413 beyond). Defaults to 4 MiB:
	// SendGrid posts events in batches.
	MaxBodyBytes int64
	// HTTPClient fetches SNS signing certificates and confirms SNS
	// subscriptions. Defaults to one with a 10 s timeout.
	HTTPClient    *http.Client
	Logger        *slog.Logger
	MeterProvider metric.MeterProvider
	// Now defaults to time.Now.
	Now func() time.Time
}

// Defaults.
const (
	DefaultMaxAge       = 5 * time.Minute
	DefaultMaxBodyBytes = 4 << 20
)

// Handler serves the inbound webhooks.
type Handler struct {
	cfg      Config
	sendgrid *ecdsa.PublicKey
	sns      *snsVerifier
	mux      *http.ServeMux
	requests metric.Int64Counter
	reports  metric.Int64Counter
}

// Path is where the inbound webhooks are served.
const Path = "/v1/inbound/"

// New checks cfg and returns the handler, to be mounted at Path.
func New(cfg Config) (*Handler, error) {
	if cfg.JetStream == nil {
		return nil, errors.New("inbound: no JetStream")
	}
	cfg.MaxAge = cmp.Or(cfg.MaxAge, DefaultMaxAge)
	cfg.MaxBodyBytes = cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = noop.NewMeterProvider()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Handler{cfg: cfg, sns: newSNSVerifier(cfg.HTTPClient), mux: http.NewServeMux()}
	if cfg.SendGridPublicKey != "" {
		key, err := ParseSendGridKey(cfg.SendGridPublicKey)
		if err != nil {
			return nil, fmt.Errorf("inbound.sendgrid.public_key: %w", err)
		}
		h.sendgrid = key
	}
	m := cfg.MeterProvider.Meter("github.com/heraldhq/herald/services/inbound")
	var err1, err2 error
	h.requests, err1 = m.Int64Counter("herald.inbound.requests",
		metric.WithDescription("Provider webhook requests, by provider and outcome: accepted, unsigned (401), refused (403: bad signature, stale, unknown account), invalid (400, 413), unavailable (503: the reports could not be stored)."))
	h.reports, err2 = m.Int64Counter("herald.inbound.reports",
		metric.WithDescription("Provider reports stored from verified requests, by provider and kind."))
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	h.mux.HandleFunc("POST "+Path+"{provider}", h.serve)
	h.mux.HandleFunc("POST "+Path+"{provider}/{tenant}/{account}", h.serve)
	return h, nil
}

// ParseSendGridKey reads a SendGrid Event Webhook verification key: base64
// of a DER (PKIX) ECDSA public key, as SendGrid shows it.
func ParseSendGridKey(b64 string) (*ecdsa.PublicKey, error) {
	der, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		return nil, errors.New("not base64")
	}
	key, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, errors.New("not a DER public key")
	}
	ec, ok := key.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an ECDSA key", key)
	}
	return ec, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// keys are what verifies one request: the platform's, or those of the
// tenant's account its path names.
type keys struct {
	tenant, account string // empty for the platform's
	sendgrid        *ecdsa.PublicKey
	twilioToken     vault.Secret
	twilioAccount   string
	sesTopics       []string
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	provider := r.PathValue("provider")
	reports, err := h.verify(r, provider)
	if err == nil {
		err = report.Publish(r.Context(), h.cfg.JetStream, reports)
		if err != nil {
			h.cfg.Logger.ErrorContext(r.Context(), "provider reports not stored: the provider will send them again",
				"provider", provider, "reports", len(reports), "error", err)
			err = &Refused{Status: http.StatusServiceUnavailable, Reason: "the reports cannot be stored right now"}
		}
	}
	var refused *Refused
	switch {
	case err == nil:
		h.count(r.Context(), provider, "accepted")
		for _, rep := range reports {
			h.reports.Add(r.Context(), 1, metric.WithAttributes(attribute.String("provider", provider), attribute.String("kind", string(rep.Kind))))
		}
		w.WriteHeader(http.StatusOK)
		return
	case !errors.As(err, &refused):
		refused = &Refused{Status: http.StatusBadRequest, Reason: err.Error()}
	}
	outcome := map[int]string{http.StatusUnauthorized: "unsigned", http.StatusForbidden: "refused",
		http.StatusNotFound: "refused", http.StatusServiceUnavailable: "unavailable"}[refused.Status]
	h.count(r.Context(), provider, cmp.Or(outcome, "invalid"))
	// The payload is never logged: it is the provider's word about
	// someone's mail, and unverified.
	h.cfg.Logger.WarnContext(r.Context(), "provider webhook refused", "provider", provider,
		"tenant", r.PathValue("tenant"), "account", r.PathValue("account"), "status", refused.Status,
		"reason", refused.Reason, "remote", r.RemoteAddr)
	answer := refused
	if r.PathValue("tenant") != "" && errors.Is(err, errUnverified) && refused.Status != http.StatusServiceUnavailable {
		answer = notVerified
	}
	http.Error(w, answer.Reason, answer.Status)
}

// notVerified is the answer to every request to a tenant's path that is
// not verified, whatever kept it from being: the path names no tenant or
// no account, an account of another provider or one without a key, or
// the signature is missing, malformed, stale or wrong. Telling these
// apart would tell anyone which tenants and accounts exist, and of what
// type; the log says which it was. A 503 (the vault or SNS cannot be
// reached) is answered as such: the provider must try again, and it says
// nothing of the account.
var notVerified = &Refused{Status: http.StatusForbidden,
	Reason: "not verified: the request is not signed with the key of the account its path names"}

// errUnverified marks a refusal made before the request was verified.
var errUnverified = errors.New("not verified")

// unverified marks err, a refusal, as made before the request was verified.
func unverified(err error) error { return fmt.Errorf("%w: %w", errUnverified, err) }

// knownProvider says whether a path's provider is one Herald takes
// webhooks from.
func knownProvider(p string) bool { return p == SendGrid || p == SES || p == Twilio }

func (h *Handler) count(ctx context.Context, provider, outcome string) {
	if !knownProvider(provider) {
		provider = "other" // the path is the caller's to make up
	}
	h.requests.Add(ctx, 1, metric.WithAttributes(attribute.String("provider", provider), attribute.String("outcome", outcome)))
}

// signed is a provider's request whose signature is present, well formed
// and fresh — all that can be judged without knowing whose it should be.
type signed interface {
	// verify says whether k's keys signed the request.
	verify(ctx context.Context, k keys) error
	// reports are what the verified request reports.
	reports(ctx context.Context, k keys) ([]report.Report, error)
}

// verify reads the request and returns its reports if it is the
// provider's own, and a Refused if not. What the request alone shows is
// judged before its keys are looked up: a tenant's account costs a vault
// read, which only a request that could be signed earns.
func (h *Handler) verify(r *http.Request, provider string) ([]report.Report, error) {
	if !knownProvider(provider) {
		return nil, refuse(http.StatusNotFound, "no provider %q: Herald takes webhooks from sendgrid, ses and twilio", provider)
	}
	body, err := h.readBody(r)
	if err != nil {
		return nil, err
	}
	var req signed
	switch provider {
	case SendGrid:
		req, err = h.sendgridRequest(r, body)
	case SES:
		req, err = h.sesRequest(body)
	case Twilio:
		req, err = h.twilioRequest(r, body)
	}
	if err != nil {
		return nil, unverified(err)
	}
	k, err := h.keys(r.Context(), provider, r.PathValue("tenant"), r.PathValue("account"))
	if err == nil {
		err = req.verify(r.Context(), k)
	}
	if err != nil {
		return nil, unverified(err)
	}
	reports, err := req.reports(r.Context(), k)
	if err != nil {
		return nil, err
	}
	for i := range reports {
		reports[i].Provider, reports[i].Tenant, reports[i].Account = provider, k.tenant, k.account
	}
	return reports, nil
}

// readBody reads the request's body, up to MaxBodyBytes.
func (h *Handler) readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, h.cfg.MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, refuse(http.StatusRequestEntityTooLarge, "body larger than %d bytes", h.cfg.MaxBodyBytes)
	case err != nil:
		return nil, refuse(http.StatusBadRequest, "reading the body: %v", err)
	}
	return body, nil
}

// keys finds what verifies a request to provider's path: the platform's
// keys, or the tenant's account's. A platform path Herald has nothing for
// is 404: a provider pointed at the wrong URL should hear that, not a 403.
// (On a tenant's path, every refusal reads alike: notVerified.)
func (h *Handler) keys(ctx context.Context, provider, tenant, account string) (keys, error) {
	k := keys{tenant: tenant, account: account}
	if tenant == "" {
		k.sendgrid, k.sesTopics = h.sendgrid, h.cfg.SESTopics
		k.twilioToken, k.twilioAccount = h.cfg.TwilioAuthToken, h.cfg.TwilioAccountSID
	} else if err := h.accountKeys(ctx, provider, &k); err != nil {
		return k, err
	}
	if provider == SendGrid && k.sendgrid == nil || provider == SES && len(k.sesTopics) == 0 ||
		provider == Twilio && k.twilioToken.IsZero() {
		return k, refuse(http.StatusNotFound, "nothing here verifies %s webhooks (%s)", provider, h.configured(provider, tenant))
	}
	return k, nil
}

// accountKeys fills k with the keys of the tenant's account k names, read
// from the vault.
func (h *Handler) accountKeys(ctx context.Context, provider string, k *keys) error {
	tenant, account := k.tenant, k.account
	if h.cfg.Accounts == nil {
		return refuse(http.StatusNotFound, "no vault: tenants' accounts are not configured")
	}
	c, err := h.cfg.Accounts.Get(ctx, tenant, account)
	switch {
	case errors.Is(err, vault.ErrNotFound):
		return refuse(http.StatusNotFound, "tenant %q has no account %q", tenant, account)
	case err != nil:
		h.cfg.Logger.ErrorContext(ctx, "vault unavailable", "error", err)
		return refuse(http.StatusServiceUnavailable, "the tenant's account cannot be read right now")
	case c.Type != provider:
		return refuse(http.StatusNotFound, "tenant %q's account %q is a %s account, not %s", tenant, account, c.Type, provider)
	}
	switch provider {
	case SendGrid:
		if c.WebhookPublicKey != "" {
			if k.sendgrid, err = ParseSendGridKey(c.WebhookPublicKey); err != nil {
				return refuse(http.StatusForbidden, "tenant %q's account %q: webhook_public_key: %v", tenant, account, err)
			}
		}
	case SES:
		k.sesTopics = c.SNSTopics
	case Twilio:
		k.twilioToken, k.twilioAccount = c.AuthToken, c.AccountSID
	}
	return nil
}

// configured says where provider's key would be configured.
func (h *Handler) configured(provider, tenant string) string {
	if tenant != "" {
		return map[string]string{SendGrid: "the account's webhook_public_key", SES: "the account's sns_topics",
			Twilio: "the account's auth_token"}[provider]
	}
	return map[string]string{SendGrid: "inbound.sendgrid.public_key", SES: "inbound.ses.topics",
		Twilio: "a twilio provider in sms.providers or whatsapp.providers"}[provider]
}
