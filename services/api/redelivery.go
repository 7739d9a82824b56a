package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/heraldhq/herald/shared/quota"
)

// RedeliveryCapType is the problem type of a webhook redelivery refused
// because its tenant's hour of redeliveries (api.redeliveries_per_hour) is
// used up.
const RedeliveryCapType = "https://herald.dev/problems/redelivery-cap"

// redelivered is what the hourly cap counts: quota.<tenant>.redelivered.<hour>.
const redelivered = "redelivered"

// admitRedelivery is what a tenant key's redelivery of n webhooks passes
// before any is sent: first its tenant's hourly cap
// (Config.RedeliveriesPerHour), counted in NATS so that every replica
// shares it; then its plan's rate, from which the request itself drew one
// (limitRate) and each webhook after the first draws one more — a
// redelivery costs what sending its webhooks one request each would. All
// or none: refused by the rate, it gives back what the cap took. Allowed,
// rate is where the tenant stands after it (the RateLimit field), if its
// plan has a rate. Admin keys are operators, not held.
func (s *Service) admitRedelivery(tenant string, rate *string) func(ctx context.Context, n int) error {
	if tenant == "" {
		return nil
	}
	return func(ctx context.Context, n int) error {
		taken, err := s.takeRedeliveries(ctx, tenant, n)
		if err != nil {
			return err
		}
		if *rate, err = s.drawRate(ctx, tenant, n-1); err != nil {
			if gerr := quota.New(s.js).GiveBack(context.WithoutCancel(ctx), taken); gerr != nil {
				s.cfg.Logger.WarnContext(ctx, "redeliveries refused by the rate stay counted in the hour", "tenant", tenant, "error", gerr)
			}
			return err
		}
		return nil
	}
}

// takeRedeliveries takes n from the tenant's hour of redeliveries.
func (s *Service) takeRedeliveries(ctx context.Context, tenant string, n int) (quota.Taken, error) {
	limit := s.cfg.RedeliveriesPerHour
	if int64(n) > limit {
		return quota.Taken{}, huma.Error422UnprocessableEntity(fmt.Sprintf(
			"%d webhooks to redeliver, more than the %d a tenant may redeliver an hour; narrow the range (since, until)", n, limit))
	}
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	taken, err := quota.New(s.js).TakeHourly(cctx, tenant, redelivered, int64(n), limit, time.Now())
	switch {
	case err != nil:
		s.cfg.Logger.WarnContext(ctx, "redelivery counter unavailable", "tenant", tenant, "error", err)
		return taken, unavailable("the redelivery counter cannot be read right now")
	case !taken.OK:
		return taken, redeliveryCapped(tenant, n, taken)
	}
	return taken, nil
}

// redeliveryCapped is the 429 of a redelivery past its tenant's hour: how
// many are left, and when the hour ends, in the detail and in the IETF
// RateLimit fields.
func redeliveryCapped(tenant string, n int, t quota.Taken) error {
	wait := int(time.Until(t.Reset).Round(time.Second) / time.Second)
	wait = max(wait, 1)
	reset := t.Reset.UTC().Format(time.RFC3339)
	return huma.ErrorWithHeaders(&huma.ErrorModel{Type: RedeliveryCapType, Title: http.StatusText(http.StatusTooManyRequests),
		Status: http.StatusTooManyRequests, Detail: fmt.Sprintf(
			"redelivery cap reached: tenant %s may redeliver %d webhooks an hour; %d remain until %s, and this redelivery has %d. "+
				"Narrow the range (since, until), or retry after %s", tenant, t.Max, t.Remaining, reset, n, reset)},
		http.Header{
			"Retry-After":      {strconv.Itoa(wait)},
			"RateLimit-Policy": {fmt.Sprintf(`"redeliveries";q=%d;w=3600`, t.Max)},
			"RateLimit":        {fmt.Sprintf(`"redeliveries";r=%d;t=%d`, t.Remaining, wait)},
		})
}

// drawRate draws extra more from the tenant's rate, all or none, and
// returns where it stands after (the RateLimit field), if its plan has a
// rate. Redis unavailable fails open, as limitRate does.
func (s *Service) drawRate(ctx context.Context, tenant string, extra int) (string, error) {
	if extra < 1 {
		return "", nil
	}
	name, limit, limited := s.intakeRate(tenant)
	if !limited {
		return "", nil
	}
	if extra >= limit.Burst { // the request itself took one of the burst
		return "", huma.Error422UnprocessableEntity(fmt.Sprintf("%d webhooks to redeliver, more than plan %s's burst of %d requests "+
			"(a redelivery costs one request per webhook); narrow the range (since, until)", extra+1, name, limit.Burst))
	}
	d, checked := s.takeIntake(ctx, tenant, limit, extra)
	if !checked {
		return "", nil
	}
	if d.Allowed {
		return d.Headers(name)["RateLimit"], nil
	}
	d.RetryAfter += time.Minute / time.Duration(limit.PerMinute) // asked again, the request draws its own one too
	h := http.Header{}
	for k, v := range d.Headers(name) {
		h.Set(k, v)
	}
	return "", huma.ErrorWithHeaders(huma.Error429TooManyRequests(fmt.Sprintf(
		"%s, and a redelivery costs one request per webhook: this one's %d are more than remain; retry after %s seconds",
		rateExceeded(name, limit), extra+1, h.Get("Retry-After"))), h)
}
