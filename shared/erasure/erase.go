package erasure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/resource"
)

// Receipt is what an erasure erased, counted. It names no address.
type Receipt struct {
	Tenant     string `json:"tenant"`
	Subscriber string `json:"subscriber"`
	// Erased is what the directory kept of her: profile, preferences,
	// topic memberships, accounts.
	recipient.Erased
	// Addresses counts the distinct addresses her kept profile revisions
	// named, which the rest were redacted of.
	Addresses int `json:"addresses"`
	// HistoryRows counts the notification index's rows redacted (none
	// without an index).
	HistoryRows int64 `json:"history_rows"`
	// LedgerEntries counts the delivery ledger's entries redacted.
	LedgerEntries int `json:"ledger_entries"`
	// InFlight counts her notifications still being sent, which could not
	// be redacted yet: erase her again once they settle.
	InFlight int `json:"in_flight"`
	// Suppressions counts the suppressions of her addresses concealed.
	Suppressions int `json:"suppressions_concealed"`
	// Complete: nothing was left to redact later (InFlight is 0).
	Complete bool      `json:"complete"`
	Time     time.Time `json:"time"`
}

// Erase erases a tenant's subscriber (see the package's doc), the
// address-bearing records first and her profile last, so that an erasure
// cut short finds her addresses when run again. A subscriber the tenant
// does not have (or has no longer) is erased of nothing, and no error:
// erasing again, after a timeout, must answer as the first time did.
func (e *Eraser) Erase(ctx context.Context, tenant, id string) (Receipt, error) {
	r := Receipt{Tenant: tenant, Subscriber: id}
	if err := recipient.CheckID(id); err != nil {
		_, err = e.dir.Erase(ctx, tenant, id, false) // the directory's refusal, naming the field
		return r, err
	}
	addresses, err := e.dir.Addresses(ctx, tenant, id)
	if err != nil {
		return r, err
	}
	r.Addresses = len(addresses)
	if err := e.redact(ctx, &r, addresses); err != nil {
		return r, err
	}
	r.Complete = r.InFlight == 0
	if r.Erased, err = e.dir.Erase(ctx, tenant, id, !r.Complete); err != nil {
		return r, err
	}
	r.Time = time.Now().UTC()
	return r, e.audit(ctx, r)
}

// redact redacts addresses from her notifications' ledger entries, then
// from their rows, then conceals them in her suppressions.
func (e *Eraser) redact(ctx context.Context, r *Receipt, addresses []string) error {
	if len(addresses) == 0 {
		return nil
	}
	ids, err := e.notifications(ctx, r.Tenant, addresses)
	if err != nil {
		return err
	}
	mask := e.masker(addresses)
	for _, id := range ids {
		changed, err := e.ledger.Redact(ctx, r.Tenant, id, mask)
		switch {
		case errors.Is(err, ledger.ErrInFlight):
			r.InFlight++
		case errors.Is(err, ledger.ErrNotFound): // pending, or forgotten: its row alone names her
		case err != nil:
			return err
		case changed:
			r.LedgerEntries++
		}
	}
	if e.history != nil {
		// Counted as found: the index may have taken the ledger's rewrites
		// of some already, which leaves the update less to change.
		r.HistoryRows = int64(len(ids))
		for _, a := range addresses {
			if _, err := e.history.Redact(ctx, r.Tenant, a, e.Mask(a)); err != nil {
				return err
			}
		}
	}
	r.Suppressions, err = e.suppressions.Conceal(ctx, r.Tenant, addresses, e.Hash, mask)
	return err
}

// notifications are the ids of the tenant's notifications to addresses:
// from the index when there is one, else from the ledger itself.
func (e *Eraser) notifications(ctx context.Context, tenant string, addresses []string) ([]string, error) {
	if e.history == nil {
		return e.ledger.To(ctx, tenant, addresses)
	}
	var ids []string
	for _, a := range addresses {
		found, err := e.history.Recipients(ctx, tenant, a)
		if err != nil {
			return nil, err
		}
		ids = append(ids, found...)
	}
	return ids, nil
}

// AuditSubject is where erasures are recorded (streams/AUDIT keeps
// audit.> for 400 days): one message per erasure, after it.
const AuditSubject = "audit.erasure"

// AuditEntry is one erasure as the AUDIT stream keeps it: who asked (the
// API key's id, or the command line's user), when, and its receipt. It
// names the subscriber by the tenant's own id, never by an address.
type AuditEntry struct {
	Time    time.Time `json:"time"`
	Who     string    `json:"who,omitempty"`
	Action  string    `json:"action"`
	Receipt Receipt   `json:"receipt"`
}

// audit records r and waits until the stream has it. A failure is
// returned: the erasure is done, and running it again records it.
func (e *Eraser) audit(ctx context.Context, r Receipt) error {
	b, err := json.Marshal(AuditEntry{Time: r.Time, Who: resource.Actor(ctx), Action: "subscriber.erase", Receipt: r})
	if err != nil {
		return err
	}
	if _, err := e.js.Publish(context.WithoutCancel(ctx), AuditSubject, b); err != nil {
		return fmt.Errorf("erasure: done, but not recorded on %s (erase again to record it): %w", AuditSubject, err)
	}
	return nil
}
