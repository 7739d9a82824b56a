package history

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// migrations are the schema's versions: migrations[i] takes it from
// version i to i+1. Append, never edit: a database remembers how far it
// got in history_schema. {timestamp} and {key} stand for the dialect's types.
var migrations = [][]string{
	{
		`CREATE TABLE notifications (
			tenant {key} NOT NULL,
			id {key} NOT NULL,
			order_id {key} NOT NULL DEFAULT '',
			document text NOT NULL DEFAULT '',
			channel text NOT NULL DEFAULT '',
			recipient text NOT NULL DEFAULT '',
			recipient_key {key} NOT NULL DEFAULT '',
			state {key} NOT NULL,
			reason text NOT NULL DEFAULT '',
			provider text NOT NULL DEFAULT '',
			provider_message_id text NOT NULL DEFAULT '',
			tries integer NOT NULL DEFAULT 0,
			created_at {timestamp} NOT NULL,
			updated_at {timestamp} NOT NULL,
			revision bigint NOT NULL DEFAULT 0,
			PRIMARY KEY (tenant, id)
		)`,
		`CREATE INDEX notifications_newest ON notifications (tenant, created_at DESC, id DESC)`,
		`CREATE INDEX notifications_by_order ON notifications (tenant, order_id, created_at, id)`,
		`CREATE INDEX notifications_by_recipient ON notifications (tenant, recipient_key, created_at, id)`,
		`CREATE INDEX notifications_by_state ON notifications (tenant, state, created_at, id)`,
		// Forget deletes by age.
		`CREATE INDEX notifications_by_update ON notifications (updated_at)`,
	},
	{
		// Providers' reports are joined by the id the provider gave the
		// message; rows without one (pending, failed, webhooks that
		// answered without) stay out of the index.
		`CREATE INDEX notifications_by_provider_message ON notifications (provider_message_id) WHERE provider_message_id <> ''`,
	},
	{
		// Subscribers, as their bucket holds them (subscribers.go). A
		// deleted one stays as a tombstone — deleted 1, every field but
		// its id blanked — so that an older change delivered late cannot
		// bring it back. The listing pages by (tenant, id), the primary key.
		`CREATE TABLE subscribers (
			tenant {key} NOT NULL,
			id {key} NOT NULL,
			name text NOT NULL DEFAULT '',
			email {key} NOT NULL DEFAULT '',
			phone {key} NOT NULL DEFAULT '',
			whatsapp {key} NOT NULL DEFAULT '',
			locale text NOT NULL DEFAULT '',
			timezone text NOT NULL DEFAULT '',
			updated_at {timestamp} NOT NULL,
			revision bigint NOT NULL,
			deleted smallint NOT NULL DEFAULT 0,
			PRIMARY KEY (tenant, id)
		)`,
		`CREATE INDEX subscribers_by_email ON subscribers (tenant, email, id) WHERE email <> ''`,
		// A phone search matches the SMS number or the WhatsApp one.
		`CREATE INDEX subscribers_by_phone ON subscribers (tenant, phone, id) WHERE phone <> ''`,
		`CREATE INDEX subscribers_by_whatsapp ON subscribers (tenant, whatsapp, id) WHERE whatsapp <> ''`,
	},
}

// migrate brings the schema to the latest version in one transaction.
// On PostgreSQL an advisory lock makes replicas starting together take
// turns; the later ones find the work done.
func (s *Store) migrate(ctx context.Context) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if s.d.lockSchema != "" {
			if _, err := tx.ExecContext(ctx, s.d.lockSchema); err != nil {
				return fmt.Errorf("schema lock: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS history_schema (version integer PRIMARY KEY)`); err != nil {
			return fmt.Errorf("schema version table: %w", err)
		}
		var version int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM history_schema`).Scan(&version); err != nil {
			return fmt.Errorf("schema version: %w", err)
		}
		if version > len(migrations) {
			return fmt.Errorf("schema version %d is newer than this binary's %d: run a newer Herald", version, len(migrations))
		}
		for v := version; v < len(migrations); v++ {
			if err := s.step(ctx, tx, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// step applies migrations[v] and records version v+1.
func (s *Store) step(ctx context.Context, tx *sql.Tx, v int) error {
	types := strings.NewReplacer("{timestamp}", s.d.timestamp, "{key}", s.d.key)
	for _, stmt := range migrations[v] {
		if _, err := tx.ExecContext(ctx, types.Replace(stmt)); err != nil {
			return fmt.Errorf("schema version %d: %w", v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO history_schema (version) VALUES ($1)`, v+1); err != nil {
		return fmt.Errorf("schema version %d: %w", v+1, err)
	}
	return nil
}
