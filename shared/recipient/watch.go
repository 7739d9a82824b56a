package recipient

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/resource"
)

// PreferenceCache is every tenant's preferences in memory, kept current by
// a watch of the bucket: the delivery workers ask it about every message
// just before sending, so that a choice made after a notification was
// routed — during a delay, or while it waited in a queue — still holds,
// for the cost of a map read rather than a round trip.
type PreferenceCache struct {
	cache *resource.Cache[Preferences]
}

// WatchPreferences follows the preferences bucket; it returns once the
// preferences present when it began are loaded. Stop ends the watch.
func WatchPreferences(ctx context.Context, js jetstream.JetStream) (*PreferenceCache, error) {
	c, err := resource.Watch(ctx, js, PreferenceSets)
	if err != nil {
		return nil, err
	}
	return &PreferenceCache{cache: c}, nil
}

// Allows says whether a notification of category may reach the tenant's
// subscriber on ch, by the subscriber's own choices, then the tenant's
// defaults (Allows), as last seen.
func (p *PreferenceCache) Allows(tenant, subscriber, category string, ch event.Channel) bool {
	if category == "" {
		return true
	}
	own, defaults := p.Choices(tenant, subscriber)
	return Allows(own, defaults, category, ch, false)
}

// Choices are the subscriber's own choices and the tenant's defaults, as
// last seen; none kept is none chosen.
func (p *PreferenceCache) Choices(tenant, subscriber string) (own, defaults Choices) {
	o, _ := p.cache.Get(PreferencesKey(tenant, subscriber))
	t, _ := p.cache.Get(PreferencesKey(tenant, ""))
	return o.Categories, t.Categories
}

// Stop ends the watch; Allows keeps answering with the choices last seen.
func (p *PreferenceCache) Stop() { p.cache.Stop() }
