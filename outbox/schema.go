package outbox

// PostgresDDL creates the outbox table (Init runs it; `herald outbox init`
// too). A service in any language adds an event with plain SQL in its own
// transaction:
//
//	INSERT INTO herald_outbox (subject, headers, payload)
//	VALUES ('orders.created', '{"Nats-Msg-Id": "evt-123"}', convert_to('{"specversion":"1.0",…}', 'UTF8'));
//
// headers is a JSON object of NATS headers, each value a string or an
// array of strings; Nats-Msg-Id (the event id) is required, and the relay
// refuses a row without one rather than publish it without protection
// against a second copy. Everything else has a default. The trigger wakes
// relays that LISTEN, once per inserting statement.
const PostgresDDL = `
CREATE TABLE IF NOT EXISTS herald_outbox (
	id           bigserial PRIMARY KEY,
	subject      text NOT NULL,
	headers      jsonb NOT NULL DEFAULT '{}',
	payload      bytea NOT NULL,
	created_at   timestamptz NOT NULL DEFAULT now(),
	published_at timestamptz,
	failed_at    timestamptz,
	attempts     integer NOT NULL DEFAULT 0,
	last_error   text
);
CREATE INDEX IF NOT EXISTS herald_outbox_unpublished ON herald_outbox (id)
	WHERE published_at IS NULL AND failed_at IS NULL;
CREATE INDEX IF NOT EXISTS herald_outbox_published ON herald_outbox (published_at)
	WHERE published_at IS NOT NULL;
CREATE OR REPLACE FUNCTION herald_outbox_wake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('herald_outbox', TG_TABLE_SCHEMA);
	RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS herald_outbox_wake ON herald_outbox;
CREATE TRIGGER herald_outbox_wake AFTER INSERT ON herald_outbox
	FOR EACH STATEMENT EXECUTE FUNCTION herald_outbox_wake();
`

// SQLiteDDL is the same table in SQLite, times in microseconds since the
// Unix epoch. SQLite has no LISTEN: its relay polls.
const SQLiteDDL = `
CREATE TABLE IF NOT EXISTS herald_outbox (
	id           integer PRIMARY KEY AUTOINCREMENT,
	subject      text NOT NULL,
	headers      text NOT NULL DEFAULT '{}',
	payload      blob NOT NULL,
	created_at   integer NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000 AS integer)),
	published_at integer,
	failed_at    integer,
	attempts     integer NOT NULL DEFAULT 0,
	last_error   text
);
CREATE INDEX IF NOT EXISTS herald_outbox_unpublished ON herald_outbox (id)
	WHERE published_at IS NULL AND failed_at IS NULL;
CREATE INDEX IF NOT EXISTS herald_outbox_published ON herald_outbox (published_at)
	WHERE published_at IS NOT NULL;
`
