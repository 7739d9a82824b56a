package history

import (
	"context"
	"fmt"
	"time"
)

// ForgetTenant deletes tenant's rows last changed before before — its own
// retention, where Forget applies everyone's — and says how many. A
// notification still in flight (pending, sending, retrying) stays until it
// settles: its row is what keeps its document from the sweep (Unsent), and
// the ledger still holds it.
func (s *Store) ForgetTenant(ctx context.Context, tenant string, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM notifications WHERE tenant = $1 AND updated_at < $2
		AND state NOT IN ($3, $4, $5)`, tenant, s.d.stamp(micro(before)), Pending, Sending, Retrying)
	if err != nil {
		return 0, fmt.Errorf("history: forgetting %s's rows before %s: %w", tenant, before.Format(time.RFC3339), err)
	}
	return res.RowsAffected()
}

// DocumentUse is one order's document type that a notification carries.
type DocumentUse struct {
	Order    string
	Document string
}

// unsent are the states in which a notification may still be sent: not yet
// claimed, being sent, retried, or failed — the sweep resends a failure
// that may be retried, and an operator may redrive one from the DLQ.
var unsent = []string{Pending, Sending, Retrying, Failed}

// Unsent lists, once each, the documents of tenant's notifications that
// may still be sent (pending, sending, retrying or failed): what must not
// be removed yet, whatever its age.
func (s *Store) Unsent(ctx context.Context, tenant string) ([]DocumentUse, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT order_id, document FROM notifications
		WHERE tenant = $1 AND state IN ($2, $3, $4, $5) AND order_id <> ''`,
		tenant, unsent[0], unsent[1], unsent[2], unsent[3])
	if err != nil {
		return nil, fmt.Errorf("history: %s's unsent documents: %w", tenant, err)
	}
	defer func() { _ = rows.Close() }()
	var out []DocumentUse
	for rows.Next() {
		var u DocumentUse
		if err := rows.Scan(&u.Order, &u.Document); err != nil {
			return nil, fmt.Errorf("history: %s's unsent documents: %w", tenant, err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: %s's unsent documents: %w", tenant, err)
	}
	return out, nil
}
