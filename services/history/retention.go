package history

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/tenant"
)

// Retentions is where the sweep reads each tenant's own retention
// (tenant.Cache): the tenants that set one.
type Retentions interface {
	Retentions() map[string]tenant.Retention
}

// Swept is what one retention sweep removed.
type Swept struct {
	// Rows are the notifications forgotten: by the platform's retention,
	// and by tenants' own.
	Rows int64
	// Documents are the rendered documents removed by tenants' payload
	// retention; Kept those old enough but still carried by a notification
	// that may be sent.
	Documents, Kept int
	// Events are the messages purged by tenants' payload retention from
	// the subjects that name them (tenantSubjects).
	Events int
	// Deferred are the tenants whose documents waited for a later sweep:
	// the index had not yet read every notification created for them.
	Deferred []string
}

// forgetLoop sweeps at once and then every SweepInterval. Every replica
// runs it; each removal is the same whoever makes it.
func (s *Service) forgetLoop(ctx context.Context) {
	if s.cfg.SweepInterval < 0 {
		return
	}
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	for {
		swept, err := s.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.cfg.Logger.WarnContext(ctx, "retention sweep failed in part; the next one tries again", "rows", swept.Rows,
				"documents", swept.Documents, "events", swept.Events, "kept_unsent", swept.Kept, "deferred", swept.Deferred, "error", err)
		case err == nil:
			s.cfg.Logger.InfoContext(ctx, "retention sweep", "rows", swept.Rows, "documents", swept.Documents, "events", swept.Events,
				"kept_unsent", swept.Kept, "deferred", swept.Deferred)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep removes what retention no longer keeps: each tenant's documents
// older than its payload retention that no notification may still carry,
// and its older messages on the subjects that name it, then the rows older than its history retention, then every row older
// than the ledger's. Documents go first: the rows are what says a document
// may still be sent.
func (s *Service) Sweep(ctx context.Context) (Swept, error) {
	now := s.cfg.Now()
	var own map[string]tenant.Retention
	if s.cfg.Registry != nil {
		own = s.cfg.Registry.Retentions()
	}
	var swept Swept
	docErr := s.sweepDocuments(ctx, now, own, &swept)
	errs := []error{s.purgeEvents(ctx, now, own, &swept)}
	for _, id := range slices.Sorted(maps.Keys(own)) {
		h := own[id].History.Duration()
		if h == 0 || h >= s.cfg.Retention {
			continue
		}
		n, err := s.cfg.Store.ForgetTenant(ctx, id, now.Add(-h))
		errs = append(errs, err)
		s.removed(ctx, "history", id, n)
		swept.Rows += n
	}
	n, err := s.cfg.Store.Forget(ctx, now.Add(-s.cfg.Retention))
	s.removed(ctx, "history", "", n)
	swept.Rows += n
	return swept, errors.Join(append(errs, docErr, err)...)
}

// removed counts n removals of kind for tenant (bounded; "" for the
// platform's retention, which removes every tenant's at once).
func (s *Service) removed(ctx context.Context, kind, tenant string, n int64) {
	if n > 0 {
		s.swept.Add(ctx, n, metric.WithAttributes(attribute.String("kind", kind),
			attribute.String("tenant", s.cfg.Tenants.Value(tenant))))
	}
}

// sweepDocuments removes the documents of tenants with a payload retention
// that are older than it, unless a notification that may still be sent
// carries them.
func (s *Service) sweepDocuments(ctx context.Context, now time.Time, own map[string]tenant.Retention, swept *Swept) error {
	if !slices.ContainsFunc(slices.Collect(maps.Values(own)), func(r tenant.Retention) bool { return r.Payloads != 0 }) {
		return nil
	}
	store, err := documents.Open(ctx, s.js)
	if err != nil {
		return err
	}
	all, err := store.All(ctx)
	if err != nil {
		return err
	}
	old := map[string][]documents.Stored{}
	for _, d := range all {
		id, _, _, ok := documents.ParseObjectName(d.Name)
		if p := own[id].Payloads.Duration(); ok && p > 0 && d.StoredAt.Before(now.Add(-p)) {
			old[id] = append(old[id], d)
		}
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(old)) {
		errs = append(errs, s.removeUnused(ctx, store, id, old[id], swept))
	}
	return errors.Join(errs...)
}

// removeUnused removes tenant's old documents that none of its
// notifications that may still be sent carries — once the index has read
// every notification created for the tenant until now, so that one just
// created for an old document (a contact added without a new revision)
// is seen.
func (s *Service) removeUnused(ctx context.Context, store *documents.Store, id string, old []documents.Stored, swept *Swept) error {
	current, err := s.indexCurrent(ctx, id)
	if err != nil || !current {
		swept.Deferred = append(swept.Deferred, id)
		return err
	}
	uses, err := s.cfg.Store.Unsent(ctx, id)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range old {
		_, order, docType, _ := documents.ParseObjectName(d.Name)
		if slices.Contains(uses, history.DocumentUse{Order: order, Document: docType}) {
			swept.Kept++
			continue
		}
		removed, err := store.Remove(ctx, d.Name)
		errs = append(errs, err)
		if removed {
			swept.Documents++
			s.removed(ctx, "documents", id, 1)
		}
	}
	return errors.Join(errs...)
}

// indexCurrent says whether the index has taken every notification created
// for tenant until now: the history consumer has acknowledged the
// tenant's last accepted record. It asks again for up to IndexWait, as a
// busy tenant's last record is written within moments.
func (s *Service) indexCurrent(ctx context.Context, tenant string) (bool, error) {
	stream, err := s.js.Stream(ctx, StatusStream)
	if err != nil {
		return false, fmt.Errorf("history: %s: %w", StatusStream, err)
	}
	last, err := stream.GetLastMsgForSubject(ctx, "notify.accepted."+tenant)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("history: %s's last accepted record: %w", tenant, err)
	}
	deadline := time.Now().Add(s.cfg.IndexWait)
	for {
		cons, err := stream.Consumer(ctx, Durable)
		if err != nil {
			return false, fmt.Errorf("history: the %s consumer of %s: %w", Durable, StatusStream, err)
		}
		if cons.CachedInfo().AckFloor.Stream >= last.Sequence {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
