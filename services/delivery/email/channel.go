package email

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/delivery"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/preferencepage"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/unsubscribe"
)

// ChannelConfig configures the email channel's adapter.
type ChannelConfig struct {
	// From is the From header of every email, "Name <address>". Required.
	From string
	// Providers are the platform's chain, tried in order on every try,
	// stopping at the first that accepts the message. Required.
	Providers []Named
	// Routes picks each tenant's provider chain (of Providers and its own
	// accounts) and From (TenantRoutes). Defaults to none: every tenant's
	// email goes through Providers, as From.
	Routes Routes
	// Documents is where rendered documents are read. Defaults to the
	// "documents" object store.
	Documents *documents.Store
	// AttachMaxBytes is the largest document attached to an email; larger
	// ones are linked with Links. Defaults to 5 MiB.
	AttachMaxBytes int64
	// Links signs download links for documents too large to attach.
	// Without it, every document is attached whatever its size.
	Links *documents.Signer
	// Unsubscribe signs the one-click unsubscribe link of an email in a
	// category its recipient may leave. Without it, none carries one.
	Unsubscribe *unsubscribe.Signer
	// Preferences signs the link to a subscriber's preference page, which
	// every email to a subscriber carries in its footer. Without it, none
	// does.
	Preferences *preferencepage.Signer
	// Logger says when a tenant's template stops parsing. Defaults to
	// discarding.
	Logger *slog.Logger
	// Domains says whether a tenant's sending domain is verified
	// (domains.Cache). Defaults to following the bucket sending_domains.
	Domains Domains
}

// Domains says whether a tenant's sending domain is verified.
type Domains interface {
	Verified(ctx context.Context, tenant, domain string) (bool, domains.Entry, error)
}

// Channel is the email adapter of the delivery protocol: it composes a
// delivery in its recipient's language, with its document attached or
// linked, and binds it to the tenant's provider chain.
type Channel struct {
	cfg      ChannelConfig
	composer *Composer
	customs  *Customs
	watched  *domains.Cache // the domains Open began following
}

// NewChannel validates cfg (after filling its defaults) and returns the
// adapter.
func NewChannel(cfg ChannelConfig) (*Channel, error) {
	cfg.AttachMaxBytes = cmp.Or(cfg.AttachMaxBytes, documents.DefaultAttachMaxBytes)
	var problems []error
	if _, err := netmail.ParseAddress(cfg.From); err != nil {
		problems = append(problems, fmt.Errorf("email.from: %q is not an address such as \"Orders <orders@example.com>\": %v", cfg.From, err))
	}
	if len(cfg.Providers) == 0 {
		problems = append(problems, errors.New("email.providers: at least one provider is required"))
	}
	for i, p := range cfg.Providers {
		if p.Name == "" || p.Provider == nil {
			problems = append(problems, fmt.Errorf("email.providers[%d]: provider is not set up", i))
		}
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	composer, err := NewComposer(cfg.From)
	if err != nil {
		return nil, err
	}
	return &Channel{cfg: cfg, composer: composer}, nil
}

// Name implements delivery.Channel.
func (c *Channel) Name() event.Channel { return event.ChannelEmail }

// LongestChain implements delivery.Channel: a tenant's chain may be
// longer than the platform's, but is bounded by the lease's AckWait share.
func (c *Channel) LongestChain() int { return len(c.cfg.Providers) }

// Open implements delivery.Channel: it opens the document store and
// follows the tenants' own templates.
func (c *Channel) Open(ctx context.Context, js jetstream.JetStream) error {
	if c.cfg.Documents == nil {
		store, err := documents.Open(ctx, js)
		if err != nil {
			return fmt.Errorf("email: %w", err)
		}
		c.cfg.Documents = store
	}
	if c.cfg.Domains == nil {
		cache, err := domains.Watch(ctx, js)
		if err != nil {
			return fmt.Errorf("email: sending domains: %w", err)
		}
		c.cfg.Domains, c.watched = cache, cache
	}
	customs, err := c.composer.FollowCustoms(ctx, js, cmp.Or(c.cfg.Logger, slog.New(slog.DiscardHandler)))
	if err != nil {
		c.Close()
		return fmt.Errorf("email: tenants' templates: %w", err)
	}
	c.customs = customs
	return nil
}

// Close stops following the tenants' templates and sending domains.
func (c *Channel) Close() {
	if c.customs != nil {
		c.customs.Stop()
		c.customs = nil
	}
	if c.watched != nil {
		c.watched.Stop()
		c.cfg.Domains, c.watched = nil, nil
	}
}

// Prepare implements delivery.Channel.
func (c *Channel) Prepare(ctx context.Context, d notification.Delivery) (delivery.Try, error) {
	route, err := c.route(ctx, d)
	if err != nil {
		return delivery.Try{}, err
	}
	if err := c.checkFrom(ctx, d.Tenant, route); err != nil {
		return delivery.Try{}, err
	}
	content, err := c.content(ctx, d)
	if err != nil {
		return delivery.Try{}, err
	}
	content.Brand = route.Brand
	c.links(d, &content)
	m, err := c.composer.Compose(d, content)
	if err != nil {
		return delivery.Try{}, err
	}
	m.From = cmp.Or(route.From, m.From)
	try := delivery.Try{Calls: make([]delivery.Call, len(route.Providers))}
	for i, p := range route.Providers {
		try.Calls[i] = delivery.Call{Provider: p.Name, Breaker: p.Breaker(),
			Send: func(ctx context.Context) (provider.Receipt, error) { return p.Provider.Send(ctx, m) }}
	}
	return try, nil
}

// links are d's own links, for the footer: to unsubscribe from its
// category, if its recipient may leave it — which for a subscriber is
// their preference, so the link names them — and to a subscriber's
// preference page.
func (c *Channel) links(d notification.Delivery, content *Content) {
	if category := d.Unsubscribable(); category != "" && c.cfg.Unsubscribe != nil {
		content.Unsubscribe = c.cfg.Unsubscribe.Link(unsubscribe.Opt{Tenant: d.Tenant, Category: category, Address: d.Recipient.Address,
			Subscriber: d.Recipient.Subscriber})
	}
	if d.Recipient.Subscriber != "" && c.cfg.Preferences != nil {
		content.Preferences = c.cfg.Preferences.Link(preferencepage.Whose{Tenant: d.Tenant, Subscriber: d.Recipient.Subscriber})
	}
}

// checkFrom refuses a tenant's own From on a domain its provider has not
// verified: sent through SES or SendGrid anyway, it would go out on the
// platform's reputation, or be refused by the provider after Herald
// claimed it sent. The platform's From, and a chain of providers that
// verify no domains (SMTP: the server's own rules decide), are not
// checked. A permanent failure, dead-lettered saying what to do; a
// registry that cannot be read is retried.
func (c *Channel) checkFrom(ctx context.Context, tenant string, route Route) error {
	if route.From == "" || c.cfg.Domains == nil || !slices.ContainsFunc(route.Providers, func(p Named) bool {
		_, ok := p.Provider.(DomainRegistrar)
		return ok
	}) {
		return nil
	}
	a, err := netmail.ParseAddress(route.From)
	if err != nil {
		return provider.Permanentf("from %q: %w", route.From, err)
	}
	_, domain, _ := strings.Cut(a.Address, "@")
	verified, e, err := c.cfg.Domains.Verified(ctx, tenant, domain)
	switch {
	case errors.Is(err, domains.ErrNotFound):
		return provider.Permanentf("from %s: %s is not a sending domain of tenant %s, and nothing is sent from an unverified domain: "+
			"herald domains add --tenant %s --domain %s, then publish its DNS records", a.Address, domain, tenant, tenant, domain)
	case err != nil:
		return fmt.Errorf("reading tenant %s's sending domains: %w", tenant, err)
	case !verified:
		return provider.Permanentf("from %s: the sending domain %s is %s at %s (%s), and nothing is sent from an unverified domain: "+
			"herald domains status --tenant %s --domain %s", a.Address, domain, e.Status, e.Provider, cmp.Or(e.Detail, "its DNS records not seen yet"), tenant, domain)
	}
	return nil
}

// route is the tenant's provider chain and From: ChannelConfig.Routes, or
// the platform's chain for every tenant.
func (c *Channel) route(ctx context.Context, d notification.Delivery) (Route, error) {
	if c.cfg.Routes == nil {
		return Route{Providers: c.cfg.Providers}, nil
	}
	return c.cfg.Routes.Route(ctx, d.Tenant)
}

// content is the delivery's document: attached, or linked when it is
// larger than AttachMaxBytes and links can be signed. A document that is
// gone, or not the one the delivery was released with, is a permanent
// failure; anything else reading it is worth retrying.
func (c *Channel) content(ctx context.Context, d notification.Delivery) (Content, error) {
	if len(d.Attachments) > 0 {
		return c.attachments(ctx, d)
	}
	if d.Document == nil || d.Document.Object == "" {
		return Content{}, nil
	}
	if d.Document.Size > c.cfg.AttachMaxBytes && c.cfg.Links != nil {
		link, expires := c.cfg.Links.Link(d.Document.Object, time.Now())
		return Content{Link: link, LinkExpires: expires}, nil
	}
	pdf, err := c.read(ctx, *d.Document)
	if err != nil {
		return Content{}, err
	}
	return Content{Attachments: []Attachment{{
		Filename: attachmentName(d), ContentType: "application/pdf", Data: pdf,
	}}}, nil
}

// attachments are the documents a delivery's caller named, each attached
// under its object's base name. There is no text to put a link in, so one
// larger than AttachMaxBytes is a permanent failure naming it.
func (c *Channel) attachments(ctx context.Context, d notification.Delivery) (Content, error) {
	var content Content
	for _, ref := range d.Attachments {
		if ref.Size > c.cfg.AttachMaxBytes {
			return Content{}, provider.Permanentf("attachment %s is %d bytes, more than documents.attach_max_bytes (%d)",
				ref.Object, ref.Size, c.cfg.AttachMaxBytes)
		}
		pdf, err := c.read(ctx, ref)
		if err != nil {
			return Content{}, err
		}
		content.Attachments = append(content.Attachments, Attachment{
			Filename: fileName(path.Base(ref.Object)), ContentType: "application/pdf", Data: pdf,
		})
	}
	return content, nil
}

// read reads a stored document. One that is gone, or not the one the
// delivery was released with, is a permanent failure; anything else
// reading it is worth retrying.
func (c *Channel) read(ctx context.Context, ref notification.Document) ([]byte, error) {
	pdf, err := c.cfg.Documents.Get(ctx, ref)
	if errors.Is(err, documents.ErrNotFound) || errors.Is(err, documents.ErrDigestMismatch) {
		return nil, provider.Permanent(err)
	}
	return pdf, err
}

// attachmentName is an ASCII file name a mail client shows as is, e.g.
// PO-2026-0042_purchase_order_r2.pdf.
func attachmentName(d notification.Delivery) string {
	order, revision := "document", 0
	if d.Order != nil {
		order, revision = d.Order.ID, d.Order.Revision
	}
	return fileName(fmt.Sprintf("%s_%s_r%d.pdf", order, d.Document.Type, revision))
}

// fileName keeps a file name to ASCII letters, digits and . - _, which
// every mail client shows as is.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '.' || r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}, name)
}
