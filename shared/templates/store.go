package templates

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/resource"
)

// maxStored bounds a template as stored: its texts at their limits, each
// byte of them escaped as JSON escapes '<' (six bytes), and room for the
// rest.
const maxStored = 6*(MaxSubject+2*MaxBody) + 4<<10

// Templates is the resource kind of tenants' templates, keyed
// <tenant>.<template>.<locale>.
var Templates = resource.Kind[Template]{Name: "template", Bucket: Bucket, NotFound: ErrNotFound,
	Key:      func(t Template) string { return Key(t.Tenant, t.Name, t.Locale) },
	Validate: Template.Check, MaxBytes: maxStored}

// Store reads and writes templates: the kind's resource store, with the
// package's own methods.
type Store resource.Store[Template]

// Open binds to the bucket, which streams.Apply creates.
func Open(ctx context.Context, js jetstream.JetStream) (*Store, error) {
	s, err := resource.Open(ctx, js, Templates)
	return (*Store)(s), err
}

// Records is s as the generic store, for code that handles every kind of
// resource alike; the package's own methods normalize what they are given
// first.
func (s *Store) Records() *resource.Store[Template] { return (*resource.Store[Template])(s) }

// Put stores t, replacing the tenant's template of that name and locale.
// The caller has checked that it renders.
func (s *Store) Put(ctx context.Context, t Template) (Template, error) {
	t.Locale = NormalizeLocale(t.Locale)
	t.UpdatedAt = time.Now().UTC()
	if _, err := s.Records().Put(ctx, t); err != nil {
		return Template{}, err
	}
	return t, nil
}

// Get is the tenant's template of name in locale, or ErrNotFound.
func (s *Store) Get(ctx context.Context, tenant, name, locale string) (Template, error) {
	locale = NormalizeLocale(locale)
	if !namePattern.MatchString(name) || !localePattern.MatchString(locale) {
		return Template{}, ErrNotFound
	}
	t, _, err := s.Records().Get(ctx, Key(tenant, name, locale))
	return t, err
}

// Delete removes the tenant's template; ErrNotFound if it had none.
func (s *Store) Delete(ctx context.Context, tenant, name, locale string) error {
	locale = NormalizeLocale(locale)
	if !namePattern.MatchString(name) || !localePattern.MatchString(locale) {
		return ErrNotFound
	}
	return s.Records().Delete(ctx, Key(tenant, name, locale))
}

// List is the tenant's templates, by name then locale.
func (s *Store) List(ctx context.Context, tenant string) ([]Template, error) {
	out, err := s.Records().All(ctx, tenant)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Template) int { return strings.Compare(a.Name+"."+a.Locale, b.Name+"."+b.Locale) })
	return out, nil
}
