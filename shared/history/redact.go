package history

import (
	"context"
	"database/sql"
	"fmt"
)

// Recipients are the ids of the tenant's notifications to address (as a
// recipient filter matches it: without case), oldest first: what an
// erasure redacts.
func (s *Store) Recipients(ctx context.Context, tenant, address string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM notifications WHERE tenant = $1 AND recipient_key = $2
		ORDER BY created_at, id`, tenant, recipientKey(address))
	if err != nil {
		return nil, fmt.Errorf("history: finding %s's notifications to an address: %w", tenant, err)
	}
	defer func() { _ = rows.Close() }()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("history: finding %s's notifications to an address: %w", tenant, err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// Redact puts mask in place of address in the tenant's rows that name it
// as their recipient — in the reason too, which may quote it — and says
// how many it changed. The rows stay, in their state: only who they went
// to is gone. The ledger's later revisions of them, redacted as well,
// replace them as any revision does.
func (s *Store) Redact(ctx context.Context, tenant, address, mask string) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE notifications SET recipient = $3, recipient_key = $4,
			reason = REPLACE(reason, $5, $3) WHERE tenant = $1 AND recipient_key = $2`,
			tenant, recipientKey(address), mask, recipientKey(mask), address)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("history: redacting an address of %s: %w", tenant, err)
	}
	return n, nil
}
