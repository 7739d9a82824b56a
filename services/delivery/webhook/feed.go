package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/webhooks"
)

// The status feed reads outcomes from the ledger's stream (OutcomeStream),
// and the tenants' other events from FeedStream, both through FeedDurable.
const (
	FeedStream    = "STATUS"
	OutcomeStream = "KV_" + ledger.Bucket
	FeedDurable   = "webhooks"
)

// Lister is the registry as the feed uses it (webhooks.Store).
type Lister interface {
	List(ctx context.Context, tenant string) ([]webhooks.Endpoint, error)
}

// FeedConfig configures the status feed.
type FeedConfig struct {
	// Endpoints are the tenants' endpoints. Required.
	Endpoints Lister
	// Concurrency defaults to 4.
	Concurrency    int
	Logger         *slog.Logger
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
}

// Feed turns each tenant's status events into webhooks: for every outcome
// — a write of the ledger that settles a notification, or an event on
// notify.status.<tenant> — one notification on the webhook channel per
// endpoint that wants its type ("notification.delivered",
// "notification.failed", "report.bounced"…), carrying the status event as
// its data; and for
// every endpoint Herald disabled ("webhook.endpoint_disabled"), one per
// other endpoint that wants it; and for every threshold of a monthly quota
// a tenant reaches ("tenant.quota.warning" at 80 %, "tenant.quota.exceeded"
// at 100 %), one per endpoint that wants it. The
// webhook delivery workers then send them as any notification — leased,
// ledgered, retried, dead-lettered — each once: its dedupe key is the
// outcome's notification and state, and the endpoint.
type Feed struct {
	cfg   FeedConfig
	js    jetstream.JetStream
	loops consumer.Group
}

// NewFeed returns the feed.
func NewFeed(js jetstream.JetStream, cfg FeedConfig) *Feed {
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 4
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Feed{cfg: cfg, js: js}
}

// Start consumes the outcomes and the other events.
func (f *Feed) Start(ctx context.Context) error {
	f.loops.Config = consumer.Config{JetStream: f.js, Concurrency: f.cfg.Concurrency, Logger: f.cfg.Logger,
		TracerProvider: f.cfg.TracerProvider, MeterProvider: f.cfg.MeterProvider}
	for _, s := range []struct {
		stream string
		handle consumer.Handler
	}{{OutcomeStream, f.handleOutcome}, {FeedStream, f.handle}} {
		c, err := consumer.Lookup(ctx, f.js, s.stream, FeedDurable)
		if err == nil {
			err = f.loops.Start(ctx, c, s.handle)
		}
		if err != nil {
			_ = f.loops.Stop(ctx)
			return fmt.Errorf("webhook feed: %w", err)
		}
	}
	return nil
}

// Stop drains.
func (f *Feed) Stop(ctx context.Context) error { return f.loops.Stop(ctx) }

// handleOutcome feeds a write of the ledger that settled a notification;
// any other write — a claim, a report kept — is passed over.
func (f *Feed) handleOutcome(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	if len(msg.Data()) == 0 { // a key's deletion or purge
		return consumer.Done()
	}
	var e ledger.Entry
	if err := json.Unmarshal(msg.Data(), &e); err != nil {
		return consumer.GiveUp(fmt.Errorf("not a ledger entry: %w", err))
	}
	st, ok := notification.OutcomeOf(e)
	if !ok || st.Template == notification.FeedTemplate {
		return consumer.Done() // a webhook's own outcome would feed the feed forever
	}
	return f.send(ctx, st.Tenant, func(endpoints []webhooks.Endpoint) ([]notification.Delivery, error) {
		return feed(st, endpoints, time.Now().UTC())
	})
}

func (f *Feed) handle(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	var kind struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(msg.Data(), &kind); err != nil {
		return consumer.GiveUp(fmt.Errorf("not a status event: %w", err))
	}
	var (
		tenant string
		build  func([]webhooks.Endpoint) ([]notification.Delivery, error)
		now    = time.Now().UTC()
	)
	switch kind.Type {
	case quota.WarningType, quota.ExceededType:
		var ev quota.Event
		if err := json.Unmarshal(msg.Data(), &ev); err != nil || ev.Tenant == "" || ev.Channel == "" || ev.Month == "" {
			return consumer.GiveUp(fmt.Errorf("not a quota event: %v", err))
		}
		tenant = ev.Tenant
		build = func(endpoints []webhooks.Endpoint) ([]notification.Delivery, error) {
			return feedQuota(ev, endpoints, now)
		}
	case notification.EndpointDisabledType:
		var ev notification.EndpointDisabled
		if err := json.Unmarshal(msg.Data(), &ev); err != nil || ev.Tenant == "" || ev.EndpointID == "" {
			return consumer.GiveUp(fmt.Errorf("not an endpoint_disabled event: %v", err))
		}
		tenant = ev.Tenant
		build = func(endpoints []webhooks.Endpoint) ([]notification.Delivery, error) {
			return feedDisabled(ev, endpoints, now)
		}
	default:
		// An outcome; before Status had a type, outcomes came without one.
		var st notification.Status
		if err := json.Unmarshal(msg.Data(), &st); err != nil || st.Tenant == "" || st.NotificationID == "" || st.State == "" {
			return consumer.GiveUp(fmt.Errorf("not a status event: %v", err))
		}
		if st.Template == notification.FeedTemplate {
			return consumer.Done() // a webhook's own outcome would feed the feed forever
		}
		tenant = st.Tenant
		build = func(endpoints []webhooks.Endpoint) ([]notification.Delivery, error) { return feed(st, endpoints, now) }
	}
	return f.send(ctx, tenant, build)
}

// send publishes the webhooks build makes of the tenant's endpoints.
func (f *Feed) send(ctx context.Context, tenant string, build func([]webhooks.Endpoint) ([]notification.Delivery, error)) consumer.Outcome {
	endpoints, err := f.cfg.Endpoints.List(ctx, tenant)
	if err != nil {
		return consumer.Retry(err, time.Second, time.Minute)
	}
	deliveries, err := build(endpoints)
	switch {
	case err != nil:
		return consumer.GiveUp(err)
	case len(deliveries) == 0:
		return consumer.Done()
	}
	if _, err := notification.Publish(ctx, f.js, deliveries); err != nil {
		return consumer.Retry(fmt.Errorf("publishing status webhooks: %w", err), time.Second, time.Minute)
	}
	if err := notification.PublishAccepted(ctx, f.js, notification.AcceptedOf(deliveries[0].Event.ID, deliveries, time.Now())); err != nil {
		return consumer.Retry(fmt.Errorf("recording status webhooks as accepted: %w", err), time.Second, time.Minute)
	}
	return consumer.Done()
}

// feed is the webhooks one outcome makes: one per endpoint that wants it,
// each once per notification and state — or, for a provider's report,
// per notification and provider event, since a message is opened often.
func feed(st notification.Status, endpoints []webhooks.Endpoint, now time.Time) ([]notification.Delivery, error) {
	typ, document := "notification."+st.State, "status_"+st.State
	if st.Report != nil {
		sum := sha256.Sum256([]byte(st.Report.Provider + "\x00" + st.Report.EventID))
		typ, document = notification.ReportType(st.Report.Kind), "report_"+hex.EncodeToString(sum[:12])
	}
	return fanOut(st.Tenant, typ, Body{Type: typ, Timestamp: st.Time, Data: st}, endpoints, now,
		func(endpoint string) notification.Key {
			return notification.Key{Subject: st.NotificationID, Document: document, Recipient: endpoint}
		}, notification.EventRef{ID: st.EventID, Type: typ})
}

// feedDisabled is the webhooks that tell a tenant's other endpoints that
// one was disabled: one per endpoint that wants it, each once per
// disabling (its key names the endpoint disabled and when).
func feedDisabled(ev notification.EndpointDisabled, endpoints []webhooks.Endpoint, now time.Time) ([]notification.Delivery, error) {
	typ := notification.EndpointDisabledType
	others := slices.DeleteFunc(slices.Clone(endpoints), func(e webhooks.Endpoint) bool { return e.ID == ev.EndpointID })
	return fanOut(ev.Tenant, typ, Body{Type: typ, Timestamp: ev.Time, Data: ev}, others, now,
		func(endpoint string) notification.Key {
			return notification.Key{Subject: ev.EndpointID, Document: "disabled_" + strconv.FormatInt(ev.Time.UnixNano(), 10), Recipient: endpoint}
		}, notification.EventRef{ID: ev.MsgID(), Type: typ})
}

// feedQuota is the webhooks that tell a tenant its month reached a
// threshold of a channel's quota: one per endpoint that wants it, each once
// per tenant, channel, month, quota and threshold.
func feedQuota(ev quota.Event, endpoints []webhooks.Endpoint, now time.Time) ([]notification.Delivery, error) {
	return fanOut(ev.Tenant, ev.Type, Body{Type: ev.Type, Timestamp: ev.Time, Data: ev}, endpoints, now,
		func(endpoint string) notification.Key {
			return notification.Key{Subject: "quota_" + string(ev.Channel) + "_" + ev.Month,
				Document: fmt.Sprintf("quota_%d_%d", ev.Quota, ev.Threshold), Recipient: endpoint}
		}, notification.EventRef{ID: ev.MsgID(), Type: ev.Type})
}

// fanOut makes one webhook of body per endpoint that wants typ, each keyed
// by key (to which it adds the tenant and channel).
func fanOut(tenant, typ string, body Body, endpoints []webhooks.Endpoint, now time.Time,
	key func(endpoint string) notification.Key, ref notification.EventRef) ([]notification.Delivery, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	var out []notification.Delivery
	for _, e := range endpoints {
		if !e.Wants(typ) {
			continue
		}
		k := key(e.ID)
		k.Tenant, k.Channel = tenant, event.ChannelWebhook
		dedupe := k.String()
		out = append(out, notification.Delivery{
			ID: notification.ID(dedupe), DedupeKey: dedupe, Tenant: tenant, Channel: event.ChannelWebhook,
			Priority: notification.PriorityNormal, Recipient: notification.Recipient{Address: e.ID},
			Template: notification.FeedTemplate, Locale: "en", Payload: payload, Event: ref, CreatedAt: now,
		})
	}
	return out, nil
}
