package console

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// AuditSubject is where the console records what operators did
// (streams/AUDIT keeps audit.>): one message per action.
const AuditSubject = "audit.console"

// AuditEntry is one action: who (the API key's id), what, on what, when,
// and how it ended.
type AuditEntry struct {
	Time   time.Time `json:"time"`
	Who    string    `json:"who,omitempty"`
	Action string    `json:"action"`
	Target string    `json:"target,omitempty"`
	Error  string    `json:"error,omitempty"`
}

type audit struct {
	js     jetstream.JetStream
	now    func() time.Time
	logger *slog.Logger
}

// record writes the entry and waits until the stream has it; if it cannot,
// the action is still logged, with the failure.
func (a *audit) record(ctx context.Context, who, action, target string, outcome error) error {
	e := AuditEntry{Time: a.now().UTC(), Who: who, Action: action, Target: target}
	if outcome != nil {
		e.Error = outcome.Error()
	}
	b, err := json.Marshal(e)
	if err == nil {
		_, err = a.js.Publish(context.WithoutCancel(ctx), AuditSubject, b)
	}
	if err != nil && a.logger != nil {
		a.logger.Error("console: the audit log did not take an action", "who", who, "action", action, "target", target, "error", err)
	}
	return err
}
