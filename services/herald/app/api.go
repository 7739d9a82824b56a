package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/services/api/console"
	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/inbound"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/inbox"
	"github.com/heraldhq/herald/shared/ratelimit"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
)

// configureAPI reads api:, plans:, vault: and history:.
// Without a master key, the provider routes answer 503.
func (a *App) configureAPI() error {
	if err := a.loadKeyring(); err != nil {
		return err
	}
	a.apiC = api.Config{MaxBodyBytes: a.cfg.API.MaxBodyBytes, IdempotencyTTL: a.cfg.API.IdempotencyTTL,
		RedeliveriesPerHour: a.cfg.API.RedeliveriesPerHour, AttachMaxBytes: a.cfg.Documents.AttachMaxBytes, Plans: a.cfg.Plans, Keyring: a.keyring,
		Categories:           router.Categories(a.routes().WithDefaults().Routes),
		AllowPrivateNetworks: a.cfg.Webhooks.AllowPrivateNetworks,
		Logger:               a.logger.With("service", "api"), MeterProvider: a.tel.MeterProvider(), Tenants: a.tenants,
		TracerProvider: a.tracer}.WithDefaults()
	if a.cfg.History.URL != "" {
		if err := checkHistoryURL(a.cfg.History.URL); err != nil {
			return err
		}
	}
	if err := a.apiC.Validate(); err != nil {
		return err
	}
	// The api renders tenants' templates to check and preview them; the
	// From a preview would carry does not matter.
	composer, err := email.NewComposer(cmp.Or(a.cfg.Email.From, "Herald <herald@example.invalid>"))
	if err != nil {
		return err
	}
	a.apiC.Templates = composer
	if err := a.checkWorkflows(); err != nil {
		return err
	}
	return a.configureInbound()
}

// checkWorkflows checks tenants' workflows as start-up checks the
// configured routes: the channels the router delivers on, the templates
// Herald ships for them.
func (a *App) checkWorkflows() (err error) {
	a.apiC.Workflows, err = a.workflowChecks()
	return err
}

// WorkflowChecks are what a tenant's workflow is checked against in the
// deployment cfg configures, as its API checks one: `herald workflows
// set` refuses what PUT /v1/workflows would.
func WorkflowChecks(cfg Config) (api.WorkflowChecks, error) {
	return (&App{cfg: cfg.WithDefaults()}).workflowChecks()
}

func (a *App) workflowChecks() (api.WorkflowChecks, error) {
	has, err := shippedTemplates()
	if err != nil {
		return api.WorkflowChecks{}, err
	}
	return api.WorkflowChecks{Channels: a.routes().WithDefaults().Channels,
		Shipped: func(ch event.Channel, name string) bool {
			found, ok := has[ch]
			return !ok || found(name) // a webhook renders no template
		}}, nil
}

// configureInbound reads inbound: and finds the platform's Twilio token.
func (a *App) configureInbound() error {
	c := a.cfg.Inbound
	if c.SendGrid.PublicKey != "" {
		if _, err := inbound.ParseSendGridKey(c.SendGrid.PublicKey); err != nil {
			return fmt.Errorf("inbound.sendgrid.public_key: %w", err)
		}
	}
	for i, arn := range c.SES.Topics {
		if !strings.HasPrefix(arn, "arn:aws") || strings.Count(arn, ":") != 5 {
			return fmt.Errorf("inbound.ses.topics[%d]: %q is not a topic ARN (arn:aws:sns:<region>:<account>:<topic>)", i, arn)
		}
	}
	if c.MaxAge < 0 {
		return fmt.Errorf("inbound.max_age: must not be negative (got %s)", c.MaxAge)
	}
	a.inboundC = inbound.Config{SendGridPublicKey: c.SendGrid.PublicKey, SESTopics: c.SES.Topics, MaxAge: c.MaxAge,
		MaxBodyBytes: a.cfg.API.MaxBodyBytes, PublicURL: a.cfg.Documents.PublicURL,
		Logger: a.logger.With("service", "inbound"), MeterProvider: a.tel.MeterProvider()}
	sections := []struct {
		field string
		TextConfig
	}{{"sms", a.cfg.SMS}, {"whatsapp", a.cfg.WhatsApp.TextConfig}}
	for _, section := range sections {
		for i, p := range section.Providers {
			if p.Type != "twilio" || !a.inboundC.TwilioAuthToken.IsZero() {
				continue
			}
			where := fmt.Sprintf("%s.providers[%d]", section.field, i)
			token, err := a.secret(where+".auth_token_env", cmp.Or(p.AuthTokenEnv, "TWILIO_AUTH_TOKEN"), p.AuthTokenFile)
			if err != nil {
				return err
			}
			a.inboundC.TwilioAuthToken, a.inboundC.TwilioAccountSID = vault.NewSecret(token), p.AccountSID
		}
	}
	return nil
}

// buildAPI makes the HTTP API, authenticating with the keys of the bucket
// api_keys, listing from the notification index when there is one,
// registering sending domains with the tenants' email providers; its
// routes are served on the public listener.
func (a *App) buildAPI(ctx context.Context) (service, error) {
	if err := a.publishPlans(ctx); err != nil {
		return nil, err
	}
	if a.cfg.History.URL != "" {
		store, err := a.historyStore(ctx)
		if err != nil {
			return nil, err
		}
		a.apiC.History = store
		a.apiC.Erasure.History = store
	}
	// An erasure's hashes are keyed by the link secret: without one,
	// erasing answers 503. So are subscribers' inbox tokens (a key of
	// their own derived from it): without it, the inbox routes answer 503.
	a.apiC.Erasure.Secret = a.linkKey
	if a.linkKey != nil {
		tokens, err := inbox.NewTokens(a.linkKey)
		if err != nil {
			return nil, err
		}
		a.apiC.InboxTokens, a.apiC.DocumentLinks = tokens, a.emailA.Links
	}
	if w := a.cfg.Push.WebPush; w != nil {
		a.apiC.VAPIDPublicKey = w.VAPIDPublicKey
	}
	registry, err := a.tenantCache(ctx)
	if err != nil {
		return nil, err
	}
	a.apiC.Registry = registry
	accounts, err := a.accounts(ctx)
	if err != nil {
		return nil, err
	}
	a.apiC.Domains = a.domains(registry, accounts).Registrar
	if a.rdb != nil {
		a.apiC.Limiter = ratelimit.New(a.rdb, a.cfg.Redis.Prefix)
	}
	// The 202 to an event names its notifications as the router plans
	// them, on the api's own watched copy of the recipients.
	a.apiC.Planner = router.NewPlanner(a.js, a.routes())
	auth := &apiKeys{app: a}
	a.apiC.Authenticator = auth
	svc, err := api.New(a.js, a.apiC)
	if err != nil {
		return nil, err
	}
	auth.svc = svc
	// Below the documents' route, which is more specific.
	a.public.Handle("/v1/", svc.Handler())
	// The links are signed as emails sign them (links, before any
	// service is built); nil without a link secret.
	if auth.console, err = console.New(a.js, console.Config{Keys: auth, Secure: !a.dev, Streams: a.cfg.StreamOptions(), Plans: a.apiC.Plans,
		History: a.apiC.History, Retry: svc.Retry, Links: a.emailA.Links,
		Logger: a.logger.With("service", "console")}); err != nil {
		return nil, err
	}
	a.public.Handle(console.Path, auth.console.Handler())
	if err := a.serveInbound(ctx); err != nil {
		return nil, err
	}
	return auth, nil
}

// publishPlans tells the command-line tools which plans the api checks
// tenants against, in the KV bucket plans: `herald tenants create --plan`
// checks the same, whatever configuration it was started with.
func (a *App) publishPlans(ctx context.Context) error {
	host, _ := os.Hostname()
	by := "the api on " + cmp.Or(host, "a host without a name")
	return tenant.PublishPlans(ctx, a.js, tenant.Published{Plans: a.apiC.Plans, By: by, At: time.Now().UTC()})
}

// serveInbound takes the providers' webhooks on the public listener,
// beside the API.
func (a *App) serveInbound(ctx context.Context) error {
	accounts, err := a.accounts(ctx)
	if err != nil {
		return err
	}
	a.inboundC.JetStream, a.inboundC.Accounts = a.js, accounts
	h, err := inbound.New(a.inboundC)
	if err != nil {
		return err
	}
	a.public.Handle(inbound.Path, h)
	return nil
}

// apiKeys runs the API with the authenticator it needs: the keys are
// followed from before the first request until after the last.
type apiKeys struct {
	app     *App
	svc     *api.Service
	console *console.Console
	auth    *apikey.Authenticator
}

func (k *apiKeys) Start(ctx context.Context) error {
	keys, err := apikey.Open(ctx, k.app.js)
	if err != nil {
		return fmt.Errorf("api: %w", err)
	}
	if k.auth, err = apikey.NewAuthenticator(keys, apikey.AuthConfig{Logger: k.app.logger.With("service", "api")}); err != nil {
		return err
	}
	if err := k.auth.Start(ctx); err != nil {
		return fmt.Errorf("api: %w", err)
	}
	if err := k.console.Start(ctx); err != nil {
		return err
	}
	return k.svc.Start(ctx)
}

func (k *apiKeys) Stop(ctx context.Context) error {
	err := k.svc.Stop(ctx)
	if k.auth != nil {
		k.auth.Stop()
	}
	return err
}

// Authenticate answers from the keys once Start has loaded them.
func (k *apiKeys) Authenticate(ctx context.Context, presented string) (api.Principal, error) {
	if k.auth == nil {
		return api.Principal{}, errors.New("api keys are not loaded yet")
	}
	return api.StoredKeys{Keys: k.auth}.Authenticate(ctx, presented)
}

// Active says, once Start has loaded the keys, whether a console
// session's key is still live.
func (k *apiKeys) Active(ctx context.Context, id string) (api.Principal, error) {
	if k.auth == nil {
		return api.Principal{}, errors.New("api keys are not loaded yet")
	}
	return api.StoredKeys{Keys: k.auth}.Active(ctx, id)
}
