package router

import (
	"cmp"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Planner names the notifications the router plans for an event, outside
// the router: the API answers POST /v1/events with their ids. It plans as
// the router does — the same decision, on its own watched copy of the
// recipients, reading from the buckets what an event names that the copy
// has not yet (at most MaxRecipients reads an event) — so an event naming
// subscribers, accounts or topics is answered the ids the router gives
// their notifications. A topic larger than FanoutPage is fanned out later,
// a page at a time: its notifications are not among the ids.
type Planner struct {
	js  jetstream.JetStream
	cfg Config
	dir atomic.Pointer[directory]
	wf  atomic.Pointer[workflowIndex]
}

// NewPlanner plans with cfg's routes (after filling its defaults) once
// started; before, it plans as Config.Plan, with no recipients.
func NewPlanner(js jetstream.JetStream, cfg Config) *Planner {
	return &Planner{js: js, cfg: cfg.WithDefaults()}
}

// Start loads the recipient buckets and the tenants' workflows, and
// follows them.
func (p *Planner) Start(ctx context.Context) error {
	dir, err := watchDirectory(ctx, p.js)
	if err != nil {
		return err
	}
	wf, err := watchWorkflows(ctx, p.js)
	if err != nil {
		dir.Stop()
		return fmt.Errorf("router: %w", err)
	}
	p.dir.Store(dir)
	p.wf.Store(wf)
	return nil
}

// Stop ends the watches.
func (p *Planner) Stop() {
	if dir := p.dir.Swap(nil); dir != nil {
		dir.Stop()
	}
	if wf := p.wf.Swap(nil); wf != nil {
		wf.Stop()
	}
}

// Plan names the notifications the router plans for the event, as
// Config.Plan does, with the recipients. The error says why an event is
// invalid, or which bucket could not be read; either way it names none.
func (p *Planner) Plan(ctx context.Context, header nats.Header, payload []byte) ([]string, error) {
	cfg := p.cfg
	if wf := p.wf.Load(); wf != nil {
		cfg.Workflows = wf
	}
	d, invalid, err := cfg.decideWith(ctx, p.dir.Load(), header, payload, time.Time{})
	if err = cmp.Or(invalid, err); err != nil {
		return nil, err
	}
	return d.ids(), nil
}
