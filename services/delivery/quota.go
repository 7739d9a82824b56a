package delivery

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/quota"
)

// count counts the notification against its tenant's monthly quota, once:
// when a worker first claims it, before any provider is called. The claim
// itself records the month (Counted, putClaim), so redelivered copies,
// copies racing past a lost lease (the claim decides those) and resends
// find it counted and count nothing more — the record and the count cost
// one ledger write, and notifications counted at once share a counter
// write (quota.Counter.Count). A worker that crashes between its claim and
// its count leaves the notification uncounted: the count errs in the
// tenant's favour. A notification that is not sent after all
// — suppressed, refused over quota, or its claim given back — is recorded
// uncounted. A redriven copy of one refused is counted, and may be sent,
// then.
//
// The webhooks of the status feed are Herald telling the tenant about its
// own notifications (its quota warnings among them): they are not counted.
func (w worker) count(ctx context.Context, j *job) (consumer.Outcome, bool) {
	if !j.counting {
		return consumer.Outcome{}, true
	}
	key := quota.Key{Tenant: j.d.Tenant, Channel: j.d.Channel, Month: j.entry.Counted}
	u, err := w.counter.Count(ctx, key, w.cfg.Quotas.Limit(j.d.Tenant, j.d.Channel))
	if err != nil {
		err = fmt.Errorf("quota counter unavailable: %w", err)
		j.log.WarnContext(ctx, "quota counter unavailable; will retry", "error", err)
		w.unclaim(ctx, j, err)
		return consumer.Retry(err, w.cfg.RetryDelay, time.Minute), false
	}
	w.tell(ctx, j, u)
	if u.Refused {
		j.uncount()
		return w.overQuota(ctx, j, u.Err()), false
	}
	return consumer.Outcome{}, true
}

// counts says whether the quota counts d.
func (w worker) counts(d notification.Delivery) bool {
	return w.cfg.Quotas != nil && d.Template != notification.FeedTemplate
}

// uncount takes back the Counted of a claim whose notification this
// worker was to count and does not send.
func (j *job) uncount() {
	if j.counting {
		j.entry.Counted, j.counting = "", false
	}
}

// overQuota gives a notification up unsent: failed for good in the ledger
// (not retryable: the resend sweep would meet the same quota), its status
// told, and dead-lettered with the reason, ready for a redrive once the
// tenant has room again. A fallback's next channel, with its own quota,
// takes over if there is one.
func (w worker) overQuota(ctx context.Context, j *job, cause error) consumer.Outcome {
	w.metrics.quota.Add(ctx, 1, w.quotaAttrs(j, "refused"))
	if next, ok := j.d.Next(cause.Error()); ok {
		return w.fallBack(ctx, j, next, cause)
	}
	e := &j.entry
	e.State, e.Reason, e.Retryable, e.Delivery = ledger.Failed, cause.Error(), false, keep(j, false)
	w.record(ctx, j)
	w.metrics.outcome(ctx, j.d, "", "over_quota")
	j.log.WarnContext(ctx, "over the tenant's monthly quota; dead-lettering unsent", "error", cause)
	return consumer.GiveUp(cause)
}

// tell publishes the thresholds u crossed on the tenant's status subject,
// where the webhook status feed sends them to its endpoints, and warns the
// operators in the log and the metric herald_quota_events_total. Each is
// crossed by one notification of the month, and its Nats-Msg-Id names the
// threshold, so each is told once.
func (w worker) tell(ctx context.Context, j *job, u quota.Use) {
	for _, ev := range u.Events(time.Now()) {
		w.metrics.quota.Add(ctx, 1, w.quotaAttrs(j, map[string]string{quota.WarningType: "warning", quota.ExceededType: "exceeded"}[ev.Type]))
		j.log.WarnContext(ctx, "monthly quota threshold reached: "+ev.String(), "channel", ev.Channel, "month", ev.Month,
			"used", ev.Used, "quota", ev.Quota, "threshold", ev.Threshold)
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusTimeout)
		err := quota.Publish(pctx, w.js, ev)
		cancel()
		if err != nil {
			j.log.WarnContext(ctx, "quota event not published", "type", ev.Type, "error", err)
		}
	}
}

func (w worker) quotaAttrs(j *job, ev string) metric.MeasurementOption {
	return metric.WithAttributes(w.metrics.channel, attribute.String("tenant", w.metrics.tenants.Value(j.d.Tenant)),
		attribute.String("event", ev))
}
