// Package outbox is the publisher's side of exactly once: an event is
// written to the service's own database in the same transaction as the
// business change it reports, and a relay publishes it to NATS after the
// commit. A rolled-back transaction leaves no event; a committed one is
// published even if the service, the relay or NATS stops in between.
//
//	tx, _ := pool.Begin(ctx)
//	_, _ = tx.Exec(ctx, `UPDATE orders SET status = 'placed' WHERE id = $1`, id)
//	_ = outbox.Add(ctx, tx, ev) // ev: a client event, or outbox.Msg(m) for any *nats.Msg
//	_ = tx.Commit(ctx)
//
// The relay (Relay, or `herald run outbox-relay`) publishes rows in the
// order of their ids with Nats-Msg-Id set, waits for JetStream to store
// each, then marks them published. A relay killed between the two
// publishes those rows again: the stream's duplicate window drops the
// second copy, and past the window Herald's ledger does (a delivery's
// dedupe key is the order's, not the message's).
//
// PostgreSQL (pgx, or database/sql with the pgx driver) and SQLite
// (database/sql with modernc.org/sqlite) are supported. The table's DDL is
// in schema.go, so services in other languages can insert rows with plain
// SQL: subject, headers (a JSON object, at least Nats-Msg-Id) and payload.
package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
)

// Event is what a service publishes. Herald's Go client's events are, and
// Msg makes one of any *nats.Msg.
type Event interface {
	Msg(ctx context.Context) (*nats.Msg, error)
}

// Msg is m as an Event, for a message built without Herald's client.
func Msg(m *nats.Msg) Event { return rawMsg{m} }

type rawMsg struct{ m *nats.Msg }

func (r rawMsg) Msg(context.Context) (*nats.Msg, error) { return r.m, nil }

// PgxTx is what Add needs of a pgx transaction (pgx.Tx has it).
type PgxTx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// SQLTx is what Add needs of a database/sql transaction (*sql.Tx has it).
type SQLTx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// ErrNoMsgID is returned by Add for a message without a Nats-Msg-Id: the
// relay could publish it twice without JetStream noticing.
var ErrNoMsgID = errors.New("outbox: the message has no Nats-Msg-Id header (its event id): without one a relay restart could publish it twice")

// Add inserts ev into the outbox within tx, the transaction of the business
// change: a pgx transaction (PgxTx) or a database/sql one (SQLTx), on
// PostgreSQL or SQLite. It is published once tx commits, never if it rolls
// back.
func Add(ctx context.Context, tx any, ev Event) error {
	m, err := ev.Msg(ctx)
	if err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	if m.Subject == "" {
		return errors.New("outbox: the message has no subject")
	}
	if m.Header.Get(nats.MsgIdHdr) == "" {
		return ErrNoMsgID
	}
	headers, err := json.Marshal(m.Header)
	if err != nil {
		return fmt.Errorf("outbox: headers: %w", err)
	}
	payload := m.Data
	if payload == nil {
		payload = []byte{} // not NULL
	}
	switch tx := tx.(type) {
	case PgxTx:
		_, err = tx.Exec(ctx, insert, m.Subject, string(headers), payload)
	case SQLTx:
		_, err = tx.ExecContext(ctx, insert, m.Subject, string(headers), payload)
	default:
		return fmt.Errorf("outbox: Add takes a pgx.Tx or a *sql.Tx, not %T", tx)
	}
	if err != nil {
		return fmt.Errorf("outbox: insert: %w", err)
	}
	return nil
}

// insert is the same statement on both databases: SQLite numbers $n
// parameters in the order they first appear.
const insert = `INSERT INTO herald_outbox (subject, headers, payload) VALUES ($1, $2, $3)`
