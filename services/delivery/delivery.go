// Package delivery is the delivery protocol, the same for every channel.
// A Service consumes one channel's deliveries from NOTIFY, through the
// durable consumers <channel>-critical, -normal and -low, and hands each to
// its channel adapter (Channel: email, sms, whatsapp, webhook), which
// composes the message and picks the tenant's providers. A delivery worker
// never applies business rules: who hears about what was decided by the
// router.
//
// Each message goes through the same steps, so that every copy of a
// notification — redelivered, republished past the duplicate window, handed
// to two workers at once — is sent at most once in effect:
//
//  1. lease the dedupe key in Redis (SET NX with a TTL beyond AckWait); if
//     another worker holds it, ask for redelivery later and look again then
//     — the holder may crash — and if Redis cannot answer, do not send;
//  2. claim the key in the ledger (a revision-checked write): a key
//     already delivered is acknowledged unsent, one another worker claimed
//     lately is left to it;
//  3. one try: a pass over the provider chain, skipping providers whose
//     circuit is open;
//  4. write the outcome to the ledger (attempts included): that write is
//     the outcome event, for whoever follows the ledger's changes (the
//     webhook status feed, the history; notification.OutcomeOf);
//     a delivered notification of a workflow run's send that a wait
//     watches (until_status) is then told to its run, on runs.in.<tenant>;
//  5. release the lease, acknowledge.
//
// A transient failure of the whole pass is retried with a growing delay (at
// least the providers' Retry-After); a permanent refusal is dead-lettered
// with its reason, then terminated; so is the last allowed try
// (Config.MaxTries), recorded as failed-but-retryable for the resend sweep.
// A notification of a suspended tenant (Config.Registry) is dead-lettered
// with the reason before step 1, and nothing of it is recorded. Between
// steps 2 and 3 a notification claimed for the first time is counted
// against its tenant's monthly quota (Config.Quotas); one over it is
// dead-lettered, not sent.
// The consumer's MaxDeliver is only a safety net for crash loops.
//
// Handlers return what should happen to their message; shared/consumer
// settles it (ack, nak with back-off, dead-letter).
package delivery

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/suppression"
	"github.com/heraldhq/herald/streams"
)

// Stream is the stream deliveries are consumed from.
const Stream = "NOTIFY"

// Durables are a channel's consumers, one per priority.
func Durables(c event.Channel) []string {
	out := make([]string, len(notification.Priorities))
	for i, p := range notification.Priorities {
		out[i] = fmt.Sprintf("%s-%s", c, p)
	}
	return out
}

// Service delivers one channel's notifications.
type Service struct {
	cfg     Config
	js      jetstream.JetStream
	chain   chain
	loops   consumer.Group
	fair    *consumer.Fair
	metrics metrics
	counter *quota.Counter
	// unfollow stops what Start began following (the suppressions, the
	// preferences), with Stop.
	unfollow []func()
}

// New validates cfg (after filling its defaults) and returns a worker.
func New(js jetstream.JetStream, cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	channel := string(cfg.Channel.Name())
	s := &Service{cfg: cfg, js: js, chain: chain{timeout: cfg.ProviderTimeout}, counter: quota.New(js)}
	var err error
	if s.metrics, err = newMetrics(cfg.MeterProvider, channel, cfg.Tenants, cfg.Platform); err != nil {
		return nil, err
	}
	if cfg.BreakerFailures > 0 {
		s.chain.breakers, err = newBreakers(channel, cfg.BreakerFailures, cfg.BreakerCooldown, cfg.Logger, cfg.MeterProvider, s.metrics.providerLabel)
		if err == nil {
			s.chain.breakers.note = cfg.Circuits
		}
	}
	return s, err
}

// Start opens the channel's stores and consumes its consumers.
func (s *Service) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil { // not started: nothing will Stop it
			s.stopFollowing()
		}
	}()
	if s.cfg.Ledger == nil {
		l, err := ledger.Open(ctx, s.js)
		if err != nil {
			return fmt.Errorf("delivery: %w", err)
		}
		s.cfg.Ledger = l
	}
	if err := s.follow(ctx); err != nil {
		return fmt.Errorf("delivery: %w", err)
	}
	if err := s.cfg.Channel.Open(ctx, s.js); err != nil {
		return fmt.Errorf("delivery: %w", err)
	}
	defer func() {
		if err != nil {
			s.closeChannel()
		}
	}()
	name := s.cfg.Channel.Name()
	s.loops.Config = consumer.Config{JetStream: s.js, Concurrency: s.cfg.Concurrency, Logger: s.cfg.Logger,
		TracerProvider: s.cfg.TracerProvider, MeterProvider: s.cfg.MeterProvider}
	if s.cfg.Fair {
		return s.startFair(ctx)
	}
	for _, durable := range Durables(name) {
		c, err := consumer.Lookup(ctx, s.js, Stream, durable)
		if err != nil {
			return fmt.Errorf("delivery: %w", err)
		}
		w := worker{Service: s, lockTTL: s.cfg.lockTTL(c.CachedInfo().Config.AckWait), maxDeliver: c.CachedInfo().Config.MaxDeliver}
		if err := s.loops.Start(ctx, c, w.handle); err != nil {
			return fmt.Errorf("delivery: %w", err)
		}
	}
	return nil
}

// follow begins following, in memory, what the protocol asks about every
// message and the config did not give: the suppressions (but for webhooks,
// whose endpoints are not addresses) and the subscribers' preferences.
func (s *Service) follow(ctx context.Context) error {
	if s.cfg.Suppressions == nil && s.cfg.Channel.Name() != event.ChannelWebhook {
		c, err := suppression.Watch(ctx, s.js)
		if err != nil {
			return err
		}
		s.cfg.Suppressions = c
		s.unfollow = append(s.unfollow, func() { c.Stop(); s.cfg.Suppressions = nil })
	}
	if s.cfg.Preferences == nil {
		c, err := recipient.WatchPreferences(ctx, s.js)
		if err != nil {
			return err
		}
		s.cfg.Preferences = c
		s.unfollow = append(s.unfollow, func() { c.Stop(); s.cfg.Preferences = nil })
	}
	return nil
}

// stopFollowing stops what follow began.
func (s *Service) stopFollowing() {
	for _, stop := range s.unfollow {
		stop()
	}
	s.unfollow = nil
}

// closeChannel ends what the channel's Open began, if it began anything
// (the email channel follows the tenants' templates).
func (s *Service) closeChannel() {
	if c, ok := s.cfg.Channel.(interface{ Close() }); ok {
		c.Close()
	}
}

// startFair serves the channel's tenants in turn (consumer.Fair): one
// class per priority, its consumers made per tenant from the durable
// declared for the priority. That durable, if a FIFO deployment created
// it, would overlap the tenants' consumers on the work queue, so it is
// removed; its unacknowledged deliveries go to the tenants' consumers.
func (s *Service) startFair(ctx context.Context) error {
	declared, err := streams.Find(Stream)
	if err != nil {
		return fmt.Errorf("delivery: %w", err)
	}
	stream, err := s.js.Stream(ctx, Stream)
	if err != nil {
		return fmt.Errorf("delivery: %w", err)
	}
	name := s.cfg.Channel.Name()
	var classes []consumer.Class
	for i, p := range notification.Priorities {
		durable := Durables(name)[i]
		c, err := declared.Consumer(durable)
		if err != nil {
			return fmt.Errorf("delivery: %w", err)
		}
		if err := consumer.RemoveShared(ctx, stream, durable, s.cfg.Logger); err != nil {
			return fmt.Errorf("delivery: %w", err)
		}
		classes = append(classes, consumer.Class{Name: durable, Prefix: fmt.Sprintf("notify.%s.%s", name, p),
			Weight: s.cfg.Weights[p], Template: c.Config})
	}
	w := worker{Service: s, lockTTL: s.cfg.lockTTL(classes[0].Template.AckWait), maxDeliver: classes[0].Template.MaxDeliver}
	cfg := s.loops.Config
	cfg.Concurrency *= len(classes)
	fc := consumer.FairConfig{Config: cfg, Stream: Stream, Classes: classes, Batch: pullBatch,
		MinConcurrency: min(leastInFlight, cfg.Concurrency)}
	if s.cfg.Rates != nil {
		fc.Ready = s.ready
	}
	if weight := s.cfg.TenantWeight; weight != nil {
		fc.Weight = func(_, tenant string) int { return weight(tenant) }
	}
	s.fair, err = consumer.StartFair(ctx, w.handle, fc)
	if err != nil {
		return fmt.Errorf("delivery: %w", err)
	}
	return nil
}

// pullBatch is how many of a tenant's deliveries one pull may take, handed
// out one a turn: a send takes milliseconds, its ack wait tens of seconds,
// and a pull per delivery was a round trip per delivery.
const pullBatch = 16

// leastInFlight is the sends the fair loop keeps in flight when the
// provider answers at once and they only queue on the cores: 18 a core.
// Measured on two cores (herald bench --tenants, docs/BENCHMARKS.md): a
// small tenant's p99 beside a 50,000 burst was 1.9–2.2× its p99 alone
// with 36 in flight, 2.6–4.8× with all 192 workers — the bulk tenant
// alone 8 % slower, a burst 7 %. Above it, the sends in flight follow the
// share of their time spent waiting on the provider (chain.call tells
// it), up to Concurrency per priority.
var leastInFlight = 18 * runtime.GOMAXPROCS(0)

// Work is what the fair loop did for no delivery, and its limit on the
// sends in flight now; zero served first come, first served.
func (s *Service) Work() consumer.FairWork {
	if s.fair == nil {
		return consumer.FairWork{}
	}
	return s.fair.Work()
}

// Stop drains: sends under way finish and are acknowledged.
func (s *Service) Stop(ctx context.Context) error {
	defer s.stopFollowing()
	defer s.closeChannel()
	if s.fair != nil {
		return errors.Join(s.fair.Stop(ctx), s.loops.Stop(ctx))
	}
	return s.loops.Stop(ctx)
}

// ownTenant refuses a delivery that reaches outside its tenant or channel:
// published on another tenant's subject (notify.<channel>.<priority>.<tenant>)
// or another channel's, or naming another tenant's document — a forged
// message that would send one tenant's PDF to an address another chose. It
// is refused before the lease and the ledger: nothing of it is recorded
// under either tenant.
func ownTenant(subject string, d notification.Delivery) error {
	tokens := strings.Split(subject, ".")
	if len(tokens) != 4 || tokens[3] != d.Tenant {
		return fmt.Errorf("forged delivery: tenant %q published on %s", d.Tenant, subject)
	}
	if tokens[1] != string(d.Channel) {
		return fmt.Errorf("forged delivery: a %q delivery published on %s", d.Channel, subject)
	}
	if d.Document != nil && d.Document.Object != "" && !documents.BelongsTo(d.Document.Object, d.Tenant) {
		return fmt.Errorf("forged delivery: document %s is not tenant %q's", d.Document.Object, d.Tenant)
	}
	if i := slices.IndexFunc(d.Attachments, func(a notification.Document) bool { return !documents.BelongsTo(a.Object, d.Tenant) }); i >= 0 {
		return fmt.Errorf("forged delivery: attachment %s is not tenant %q's", d.Attachments[i].Object, d.Tenant)
	}
	return nil
}

// admit asks the registry, if there is one, whether the tenant is served:
// a suspended tenant's notifications are not sent.
func (s *Service) admit(tenant string) error {
	if s.cfg.Registry == nil {
		return nil
	}
	return s.cfg.Registry.Admit(tenant, false)
}
