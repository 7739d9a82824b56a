package delivery

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/lock"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/quota"
	"github.com/heraldhq/herald/shared/suppression"
	"github.com/heraldhq/herald/shared/telemetry"
)

// worker handles the messages of one consumer.
type worker struct {
	*Service
	lockTTL time.Duration
	// maxDeliver is the consumer's: a retry on the last delivery is given
	// up by the settler, and settles the notification (ordering.go).
	maxDeliver int
}

// job is one message on its way through the protocol.
type job struct {
	msg   jetstream.Msg
	d     notification.Delivery
	entry ledger.Entry
	lease *lock.Lease
	log   *slog.Logger
	// counting: the claim says the notification is Counted, and this
	// worker is to count it (quota.go).
	counting bool
	// parked: the notification waits behind an earlier revision of its
	// order, settled only when that one is (ordering.go); released: why a
	// parked copy came back, told in its next attempt's note.
	parked   bool
	released string
}

var (
	errLeaseHeld   = errors.New("another worker holds the notification's lease")
	errClaimedLate = errors.New("another worker claimed the notification without holding its lease (was Redis restarted?)")
)

// handle runs the protocol on msg, then releases the next revision of its
// order if this one is settled (ordering.go).
func (w worker) handle(ctx context.Context, msg jetstream.Msg) consumer.Outcome {
	j := &job{msg: msg, log: w.cfg.Logger}
	return w.release(ctx, j, w.protocol(ctx, j))
}

func (w worker) protocol(ctx context.Context, j *job) consumer.Outcome {
	msg := j.msg
	d, err := notification.Decode(msg.Data())
	if err == nil {
		err = ownTenant(msg.Subject(), d)
	}
	if err != nil {
		w.metrics.outcome(ctx, d, "", "failed")
		w.cfg.Logger.ErrorContext(ctx, "malformed delivery; dead-lettering", "subject", msg.Subject(), "error", err)
		return consumer.GiveUp(err)
	}
	j.d, j.log = d, w.cfg.Logger.With("notification_id", d.ID, "tenant", d.Tenant)
	if err := w.admit(d.Tenant); err != nil {
		w.metrics.outcome(ctx, d, "", "refused")
		w.cfg.Logger.WarnContext(ctx, "tenant not served; dead-lettering", "notification_id", d.ID, "tenant", d.Tenant, "error", err)
		return consumer.GiveUp(err)
	}
	j.released = msg.Headers().Get(headerReleased)
	// Delivered is final: a redelivered copy of a delivered notification
	// is acked without queueing for the lease again — that is what broke
	// the lockstep of copies that keep colliding. A first delivery skips
	// this read; the check after taking the lease covers it.
	md, err := msg.Metadata()
	first := err == nil && md.NumDelivered == 1
	if !first {
		if e, err := w.cfg.Ledger.Get(ctx, d.Tenant, d.DedupeKey); err == nil && e.State == ledger.Delivered {
			return w.duplicate(ctx, j, e)
		}
	}
	lease, err := w.cfg.Locker.Acquire(ctx, d.DedupeKey, w.lockTTL)
	switch {
	case errors.Is(err, lock.ErrHeld):
		// Another worker is on it. Not acked: if it crashes, this copy
		// must still go out; on redelivery the ledger tells. The delay
		// grows, because every redelivery counts toward MaxDeliver and
		// the holder may rightly work until its lease ends.
		w.metrics.lockBusy.Add(ctx, 1, w.metrics.attrs(d))
		return consumer.Retry(errLeaseHeld, w.cfg.RetryDelay, w.lockTTL)
	case err != nil:
		w.metrics.unguarded.Add(ctx, 1, w.metrics.attrs(d))
		j.log.WarnContext(ctx, "redis unavailable: not sending without the lock; will retry", "error", err)
		return consumer.Retry(fmt.Errorf("redis unavailable, not sending without the lock: %w", err), w.cfg.RetryDelay, time.Minute)
	}
	j.lease = lease
	defer func() {
		if err := lease.Release(context.WithoutCancel(ctx)); errors.Is(err, lock.ErrNotHeld) {
			j.log.WarnContext(ctx, "the lease expired while working; raise the channel's lock_ttl", "lock_ttl", w.lockTTL)
		}
	}()

	// A first delivery claims a key nobody recorded in one write (a
	// create, which fails if the key exists); anything else — and any
	// create that fails — reads the ledger first.
	j.entry = ledger.Entry{DedupeKey: d.DedupeKey, Tenant: d.Tenant}
	if !first || w.putClaim(ctx, j) != nil {
		if j.entry, err = w.cfg.Ledger.Get(ctx, d.Tenant, d.DedupeKey); err != nil {
			j.log.WarnContext(ctx, "ledger unavailable; will retry", "error", err)
			return consumer.Retry(fmt.Errorf("ledger unavailable: %w", err), w.cfg.RetryDelay, time.Minute)
		}
		if j.entry.State == ledger.Delivered {
			return w.duplicate(ctx, j, j.entry)
		}
		if o, claimed := w.claim(ctx, j); !claimed {
			return o
		}
	}
	if o, stop := w.suppressed(ctx, j); stop {
		return o
	}
	if o, stop := w.heldBack(ctx, j); stop {
		return o
	}
	if o, stop := w.wait(ctx, j); stop {
		return o
	}
	if o, ok := w.count(ctx, j); !ok {
		return o
	}
	return w.try(ctx, j)
}

// suppressed settles a notification whose recipient's address the tenant
// suppressed on its channel or on all (a hard bounce, a complaint, by
// hand), or who unsubscribed from its category: recorded as suppressed,
// its status event published, acknowledged — neither tried nor counted nor
// dead-lettered, as it is not a failure. Suppressions that cannot be read
// hold it (the claim handed back, retried): sending to a suppressed
// address is what must not happen.
func (w worker) suppressed(ctx context.Context, j *job) (consumer.Outcome, bool) {
	if w.cfg.Suppressions == nil || j.d.Channel == event.ChannelWebhook {
		return consumer.Outcome{}, false
	}
	s, err := w.cfg.Suppressions.Blocks(ctx, j.d.Tenant, j.d.Channel, j.d.Recipient.Address, j.d.Unsubscribable())
	switch {
	case errors.Is(err, suppression.ErrNotFound):
		return consumer.Outcome{}, false
	case err != nil:
		err = fmt.Errorf("suppressions unavailable, not sending unchecked: %w", err)
		j.log.WarnContext(ctx, "suppressions unavailable; will retry", "error", err)
		w.unclaim(ctx, j, err)
		return consumer.Retry(err, w.cfg.RetryDelay, time.Minute), true
	}
	j.uncount()
	e := &j.entry
	e.State, e.Retryable = ledger.Suppressed, false
	e.Reason = fmt.Sprintf("suppressed: %s since %s", strings.ReplaceAll(s.Reason, "_", " "), s.CreatedAt.UTC().Format(time.DateOnly))
	if s.Category != "" {
		e.Reason = fmt.Sprintf("suppressed: unsubscribed from %s since %s", s.Category, s.CreatedAt.UTC().Format(time.DateOnly))
	}
	if s.Detail != "" {
		e.Reason += " (" + s.Detail + ")"
	}
	w.record(ctx, j)
	w.metrics.outcome(ctx, j.d, "", "suppressed")
	j.log.InfoContext(ctx, "recipient suppressed; not sent", "reason", s.Reason, "source", s.Source)
	return consumer.Done(), true
}

// heldBack settles, as suppressed, a notification to a subscriber in a
// category they may leave, on a channel they switched off for it (or
// their tenant did, by default): asked just before sending, so that a
// choice made after the notification was routed holds. Like a suppression
// it is recorded with why, its status event published, acknowledged —
// neither tried nor counted nor dead-lettered. An inline recipient (no
// subscriber) has no preferences; a required notification is sent
// whatever they are.
func (w worker) heldBack(ctx context.Context, j *job) (consumer.Outcome, bool) {
	d := j.d
	category := d.Unsubscribable()
	if w.cfg.Preferences == nil || d.Recipient.Subscriber == "" || category == "" ||
		w.cfg.Preferences.Allows(d.Tenant, d.Recipient.Subscriber, category, d.Channel) {
		return consumer.Outcome{}, false
	}
	j.uncount()
	e := &j.entry
	e.State, e.Retryable = ledger.Suppressed, false
	e.Reason = fmt.Sprintf("preference: %s.%s switched off", category, d.Channel)
	w.record(ctx, j)
	w.metrics.outcome(ctx, d, "", "suppressed")
	j.log.InfoContext(ctx, "the subscriber's preferences hold this back; not sent", "category", category)
	return consumer.Done(), true
}

// put writes the job's entry in state, detached from ctx and bounded: a
// claim that lands after its worker gave up on it would hold every copy off
// for a lease TTL. Every claim, first or not, says what the notification is
// (describe).
func (w worker) put(ctx context.Context, j *job, state ledger.State) error {
	e := &j.entry
	e.NotificationID, e.Channel, e.State = j.d.ID, string(j.d.Channel), state
	describe(e, j.d)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	return w.cfg.Ledger.Put(cctx, e)
}

// putClaim writes the claim: Sending, and — for a notification the quota
// counts and nobody counted yet — Counted, this worker counting it next
// (quota.go), so the claim and the count's record are one write.
func (w worker) putClaim(ctx context.Context, j *job) error {
	j.counting = j.entry.Counted == "" && w.counts(j.d)
	if j.counting {
		j.entry.Counted = quota.Month(time.Now())
	}
	err := w.put(ctx, j, ledger.Sending)
	if err != nil && j.counting {
		j.entry.Counted, j.counting = "", false
	}
	return err
}

// describe copies into e what the listing shows of d, so it can list a
// notification whose notification.Accepted record it never received: the
// order, document and recipient that record names, taken from it so the
// two never disagree.
func describe(e *ledger.Entry, d notification.Delivery) {
	n := notification.AcceptedOf("", []notification.Delivery{d}, time.Time{}).Notifications[0]
	e.Order, e.Document, e.Recipient = n.Order, n.Document, n.Recipient
	if d.FallbackOf != nil {
		e.FallbackOf = d.FallbackOf.NotificationID
	}
	e.RedeliveryOf = d.RedeliveryOf
	e.Unsubscribable = d.Unsubscribable()
	e.Template, e.EventID = d.Template, d.Event.ID
}

// keep is the delivery message an entry keeps once settled: a retryable
// failure's, for the resend sweep; a webhook's, for a redelivery on demand;
// none else.
func keep(j *job, retryable bool) json.RawMessage {
	if retryable || j.d.Channel == event.ChannelWebhook {
		return j.msg.Data()
	}
	return nil
}

// claim records in the ledger that this worker is sending now. The write is
// revision-checked, so of two workers that both hold a lease — possible
// only if Redis lost it — one claim fails. A recent claim by another worker
// means it may be sending this very moment: come back later.
func (w worker) claim(ctx context.Context, j *job) (consumer.Outcome, bool) {
	if j.entry.State == ledger.Sending && time.Since(j.entry.UpdatedAt) < w.lockTTL {
		w.metrics.lockBusy.Add(ctx, 1, w.metrics.attrs(j.d))
		j.log.WarnContext(ctx, "another worker claimed this notification without holding its lease (was Redis restarted?); waiting",
			"claimed_at", j.entry.UpdatedAt)
		return consumer.Retry(errClaimedLate, w.cfg.RetryDelay, w.lockTTL), false
	}
	if err := w.putClaim(ctx, j); err != nil {
		w.metrics.lockBusy.Add(ctx, 1, w.metrics.attrs(j.d))
		j.log.WarnContext(ctx, "could not claim the notification; will retry", "error", err)
		return consumer.Retry(fmt.Errorf("could not claim the notification: %w", err), w.cfg.RetryDelay, w.lockTTL), false
	}
	return consumer.Outcome{}, true
}

// unclaim gives the claim back when the worker stops before calling any
// provider — cancelled by a hurried shutdown, or a store that did not
// answer: the entry says retrying, and the next copy claims it at once
// instead of waiting out the lease TTL, as it must for a claim whose
// worker may be sending.
func (w worker) unclaim(ctx context.Context, j *job, cause error) {
	j.entry.Reason = cause.Error()
	j.uncount()
	if err := w.put(ctx, j, ledger.Retrying); err != nil {
		j.log.WarnContext(ctx, "could not give the claim back; the next copy waits for the lease TTL", "error", err)
	}
}

func (w worker) duplicate(ctx context.Context, j *job, e ledger.Entry) consumer.Outcome {
	j.entry = e
	w.metrics.outcome(ctx, j.d, e.Provider, "duplicate")
	j.log.InfoContext(ctx, "already delivered; acknowledging this copy unsent", "provider", e.Provider)
	return w.tellRun(ctx, j)
}

// try makes one pass over the chain and settles the message by its outcome.
func (w worker) try(ctx context.Context, j *job) consumer.Outcome {
	d := j.d
	ctx, span := telemetry.Start(ctx, "deliver "+string(d.Channel),
		attribute.String("herald.notification_id", d.ID), attribute.String("herald.tenant", d.Tenant),
		attribute.String("herald.template", d.Template), attribute.Int("herald.try", j.entry.Tries+1))
	defer span.End()
	var result pass
	try, err := w.cfg.Channel.Prepare(ctx, d)
	if err == nil {
		try, err = try.pinned(d.Providers)
	}
	if err == nil {
		// A send under way is finished, not abandoned, when the worker
		// stops: abandoning it is how a provider ends up with a message the
		// ledger never hears of. Each provider call is bounded anyway.
		result = w.chain.send(context.WithoutCancel(ctx), try.Calls)
		err = result.Failures
	}
	attempt := ledger.Attempt{Time: time.Now().UTC(), Provider: result.Receipt.Provider, Ambiguous: provider.IsAmbiguous(err),
		Note: strings.Join(slices.DeleteFunc([]string{j.released, cmp.Or(result.Receipt.Note, try.Note)}, func(s string) bool { return s == "" }), "; ")}
	if md, _ := j.msg.Metadata(); md != nil {
		attempt.Delivery = md.NumDelivered
	}
	if err != nil {
		attempt.Error = err.Error()
	}
	j.entry.Record(attempt)
	if err != nil && !result.Accepted {
		span.SetStatus(codes.Error, err.Error())
	}
	span.SetAttributes(attribute.String("herald.provider", result.Receipt.Provider), attribute.Bool("herald.accepted", result.Accepted))
	if attempt.Ambiguous {
		w.metrics.ambiguous.Add(ctx, 1, w.metrics.attrs(d))
		j.log.WarnContext(ctx, "ambiguous send: a provider may have accepted before failing, so the recipient may get this twice",
			"dedupe_key", d.DedupeKey, "accepted_by", result.Receipt.Provider, "error", err)
	}
	switch {
	case result.Accepted:
		return w.delivered(ctx, j, result.Receipt)
	case provider.IsPermanent(err):
		return w.failed(ctx, j, err, false)
	case j.entry.Tries >= w.cfg.MaxTries:
		return w.failed(ctx, j, fmt.Errorf("gave up after %d tries: %w", j.entry.Tries, err), true)
	}
	return w.retry(ctx, j, err)
}

func (w worker) delivered(ctx context.Context, j *job, r provider.Receipt) consumer.Outcome {
	d, e := j.d, &j.entry
	e.State, e.Provider, e.ProviderMessageID, e.Reason, e.Retryable = ledger.Delivered, r.Provider, r.MessageID, "", false
	e.Delivery = keep(j, false)
	w.metrics.outcome(ctx, d, r.Provider, "delivered")
	// A redelivery keeps the original's times, which its body carries; its
	// latency is not the pipeline's.
	if !d.CreatedAt.IsZero() && d.RedeliveryOf == "" {
		w.metrics.latency.Record(ctx, time.Since(d.CreatedAt).Seconds(), w.metrics.attrs(d))
	}
	if !d.Event.StoredAt.IsZero() && d.RedeliveryOf == "" {
		w.metrics.endToEnd.Record(ctx, time.Since(d.Event.StoredAt).Seconds(), w.metrics.attrs(d))
	}
	w.record(ctx, j)
	j.log.InfoContext(ctx, "delivered", "provider", r.Provider, "provider_message_id", r.MessageID, "tries", e.Tries)
	return w.tellRun(ctx, j)
}

// tellRun tells the workflow run whose send made a delivered notification
// (one whose wait waits for it: until_status) that it was delivered. If it
// cannot, the message is retried: its next copy finds it delivered in the
// ledger and tells the run then (duplicate), once.
func (w worker) tellRun(ctx context.Context, j *job) consumer.Outcome {
	if err := notification.PublishRunStatus(ctx, w.js, j.d, string(ledger.Delivered), time.Now().UTC()); err != nil {
		j.log.WarnContext(ctx, "delivered, but its run was not told; will retry", "error", err)
		return consumer.Retry(fmt.Errorf("telling run %s of its delivery: %w", j.d.Run.Key, err), w.cfg.RetryDelay, time.Minute)
	}
	return consumer.Done()
}

// failed records a notification given up — permanently refused, or out of
// tries (retryable: the sweep may resend it) — then dead-letters it, unless
// its fallback's next channel takes over.
func (w worker) failed(ctx context.Context, j *job, cause error, retryable bool) consumer.Outcome {
	if next, ok := j.d.Next(cause.Error()); ok {
		return w.fallBack(ctx, j, next, cause)
	}
	e := &j.entry
	e.State, e.Reason, e.Retryable, e.Delivery = ledger.Failed, cause.Error(), retryable, keep(j, retryable)
	outcome := "failed"
	if retryable {
		outcome = "exhausted"
	}
	w.record(ctx, j)
	w.metrics.outcome(ctx, j.d, "", outcome)
	j.log.ErrorContext(ctx, "delivery failed; dead-lettering", "tries", e.Tries, "error", cause)
	return consumer.GiveUp(cause)
}

// fallBack hands a notification that failed for good to the next channel
// of its fallback: a new notification, published (Nats-Msg-Id = its dedupe
// key, so a copy of this one falling back again is dropped, and past the
// duplicate window its own ledger entry stops a second send) and recorded
// as accepted before this one is recorded as failed and acknowledged. If
// it cannot be published, this try is retried as a transient failure.
func (w worker) fallBack(ctx context.Context, j *job, next notification.Delivery, cause error) consumer.Outcome {
	if _, err := notification.Publish(ctx, w.js, []notification.Delivery{next}); err != nil {
		return w.retry(ctx, j, fmt.Errorf("%w; falling back to %s failed: %w", cause, next.Channel, err))
	}
	if err := notification.PublishAccepted(ctx, w.js, notification.AcceptedOf(next.Event.ID, []notification.Delivery{next}, time.Now())); err != nil {
		j.log.WarnContext(ctx, "the fallback's accepted record was not published; it is listed once a worker claims it", "error", err)
	}
	e := &j.entry
	e.State, e.Reason, e.Retryable, e.FallbackTo = ledger.Failed, fmt.Sprintf("%v; fell back to %s", cause, next.Channel), false, next.ID
	w.record(ctx, j)
	w.metrics.outcome(ctx, j.d, "", "fallback")
	j.log.WarnContext(ctx, "delivery failed; falling back to the next channel", "next_channel", next.Channel,
		"next_notification_id", next.ID, "error", cause)
	return consumer.Done()
}

func (w worker) retry(ctx context.Context, j *job, cause error) consumer.Outcome {
	e := &j.entry
	e.State, e.Reason, e.Retryable = ledger.Retrying, cause.Error(), true
	w.record(ctx, j)
	w.metrics.outcome(ctx, j.d, "", "retry")
	j.log.WarnContext(ctx, "every provider failed; will retry", "tries", e.Tries, "error", cause)
	// The back-off's jitter may halve a delay: starting from twice the
	// providers' Retry-After keeps the wait at least as long as they asked.
	after := provider.RetryAfter(cause)
	return consumer.Retry(cause, max(w.cfg.RetryDelay, 2*after), max(w.cfg.MaxRetryDelay, 2*after))
}

// recordTimeout bounds how long a worker insists on writing a claim (a
// NATS leader election takes seconds); statusTimeout, an event it tells on
// notify.status.<tenant> (a quota threshold reached).
const (
	recordTimeout = 15 * time.Second
	statusTimeout = 15 * time.Second
)

// record writes the entry, retrying with a growing pause for as long as it
// takes: an outcome left unwritten is a claim left standing, and once that
// claim is older than a lease TTL a redelivered copy sends again. So the
// lease is extended while the ledger cannot be written — every copy waits —
// and only a shutdown that ran out of time (ctx cancelled) gives up; the ack
// follows either way.
//
// A conflict is either this worker's own write, which landed although its
// answer was lost, or another worker's, written while we held the lease —
// only possible if the lease expired — which is reported loudly.
func (w worker) record(ctx context.Context, j *job) {
	d, e := j.d, &j.entry
	extended := time.Now()
	for try := 0; ; try++ {
		// Each try is detached from ctx: even a worker stopping for good
		// makes one.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		err := w.cfg.Ledger.Put(tctx, e)
		cancel()
		if err == nil {
			return
		}
		if errors.Is(err, ledger.ErrConflict) {
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
			other, gerr := w.cfg.Ledger.Get(tctx, d.Tenant, d.DedupeKey)
			cancel()
			switch {
			case gerr != nil:
				err = gerr // read it again on the next try
			case sameOutcome(other, *e):
				return
			default:
				if other.State == ledger.Delivered && e.State == ledger.Delivered {
					w.metrics.outcome(ctx, d, e.Provider, "duplicate_sent")
				}
				j.log.ErrorContext(ctx, "another worker recorded this notification while we held its lease",
					"ours", e.State, "theirs", other.State, "their_provider", other.Provider)
				return
			}
		}
		if try == 0 || try%10 == 0 {
			j.log.WarnContext(ctx, "ledger unavailable; holding the lease until the outcome is recorded", "state", e.State, "error", err)
		}
		if time.Since(extended) > w.lockTTL/3 {
			if xerr := j.lease.Extend(ctx, w.lockTTL); xerr != nil {
				j.log.WarnContext(ctx, "could not extend the lease while waiting for the ledger", "error", xerr)
			}
			extended = time.Now()
		}
		select {
		case <-ctx.Done():
			j.log.ErrorContext(ctx, "could not record the outcome in the ledger", "state", e.State, "error", err)
			return
		case <-time.After(min(100*time.Millisecond<<min(try, 5), 2*time.Second, w.lockTTL/4)):
		}
	}
}

// sameOutcome reports whether the ledger's entry is the one this worker
// wrote: same state, same receipt, after the same last attempt.
func sameOutcome(ledgered, ours ledger.Entry) bool {
	n := len(ours.Attempts)
	return ledgered.State == ours.State && ledgered.ProviderMessageID == ours.ProviderMessageID &&
		len(ledgered.Attempts) == n && n > 0 && ledgered.Attempts[n-1].Time.Equal(ours.Attempts[n-1].Time)
}
