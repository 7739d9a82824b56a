package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldhq/herald/shared/provider"
)

// breakers are the circuit breakers of one channel's providers, one per
// Call.Breaker key. After Failures transient failures in a row a provider
// is skipped without being called — the chain moves on to the next at once
// instead of waiting out its timeout — and after Cooldown one call probes
// it again. A permanent refusal says nothing about a provider's health (an
// invalid address), so it neither trips nor resets a breaker.
type breakers struct {
	channel  string
	failures uint32
	cooldown time.Duration
	logger   *slog.Logger
	label    func(provider string) string // bounded metric label
	changes  metric.Int64Counter
	open     metric.Int64UpDownCounter
	// note tells another process's reader (the console) of each change.
	note func(channel, breaker, state string)

	mu sync.Mutex
	m  map[string]*gobreaker.CircuitBreaker[provider.Receipt]
}

func newBreakers(channel string, failures int, cooldown time.Duration, logger *slog.Logger, mp metric.MeterProvider, label func(string) string) (*breakers, error) {
	m := mp.Meter("github.com/heraldhq/herald/services/delivery")
	b := &breakers{channel: channel, failures: uint32(failures), cooldown: cooldown, logger: logger, label: label,
		m: map[string]*gobreaker.CircuitBreaker[provider.Receipt]{}}
	var errs [2]error
	b.changes, errs[0] = m.Int64Counter("herald.delivery.circuit_changes",
		metric.WithDescription("Provider circuit breaker transitions, by channel, provider and the state entered (open: skipped without being called; half-open: probing; closed: in use)."))
	b.open, errs[1] = m.Int64UpDownCounter("herald.delivery.circuits_open",
		metric.WithDescription("Provider circuit breakers open or probing now, by channel and provider."))
	return b, errors.Join(errs[:]...)
}

// errCircuitOpen is why a provider was skipped.
var errCircuitOpen = errors.New("skipped: its circuit is open")

// call sends through the breaker of call.Breaker (or call.Provider). A
// skipped provider fails transiently, and is not ambiguous: nothing was
// sent. It asks for the cool-down as its Retry-After, so a try on which
// every circuit was open is retried only once a probe can go through.
func (b *breakers) call(ctx context.Context, call Call, send func(context.Context) (provider.Receipt, error)) (provider.Receipt, error) {
	r, err := b.get(call).Execute(func() (provider.Receipt, error) { return send(ctx) })
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return r, &provider.TransientError{Err: fmt.Errorf("%w after %d failures in a row", errCircuitOpen, b.failures), RetryAfter: b.cooldown}
	}
	return r, err
}

func (b *breakers) get(call Call) *gobreaker.CircuitBreaker[provider.Receipt] {
	key := call.Breaker
	if key == "" {
		key = call.Provider
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if cb, ok := b.m[key]; ok {
		return cb
	}
	ctx := context.Background()
	channel, label := attribute.String("channel", b.channel), attribute.String("provider", b.label(call.Provider))
	cb := gobreaker.NewCircuitBreaker[provider.Receipt](gobreaker.Settings{
		Name:        key,
		MaxRequests: 1,
		Timeout:     b.cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= b.failures },
		IsExcluded:  provider.IsPermanent,
		OnStateChange: func(_ string, from, to gobreaker.State) {
			b.logger.WarnContext(ctx, "provider circuit breaker changed", "channel", b.channel, "provider", call.Provider, "from", from.String(), "to", to.String())
			b.changes.Add(ctx, 1, metric.WithAttributes(channel, label, attribute.String("state", to.String())))
			if b.note != nil {
				b.note(b.channel, key, to.String())
			}
			switch {
			case from == gobreaker.StateClosed:
				b.open.Add(ctx, 1, metric.WithAttributes(channel, label))
			case to == gobreaker.StateClosed:
				b.open.Add(ctx, -1, metric.WithAttributes(channel, label))
			}
		},
	})
	b.m[key] = cb
	return cb
}
