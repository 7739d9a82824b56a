package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/streams"
)

// rig is the workflow service alone on fresh streams (the timers and
// digests runs drive it without a router), with a connection of its own
// to start runs on, as the router's.
type rig struct {
	*env
	starts jetstream.JetStream
	stop   func()
	pc     *nats.Conn
}

func startRig(ctx context.Context, natsURL string, concurrency int, logger *slog.Logger) (_ *rig, err error) {
	e, err := startNATSEnv(ctx, natsURL, streams.Options{})
	if err != nil {
		return nil, err
	}
	r := &rig{env: e, stop: func() {}}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	wf, err := workflow.New(e.js, workflow.Config{Concurrency: concurrency, Logger: logger})
	if err != nil {
		return nil, err
	}
	if r.stop, err = startAll(ctx, []service{wf}); err != nil {
		r.stop = func() {}
		return nil, err
	}
	if r.pc, err = nats.Connect(e.url); err != nil {
		return nil, fmt.Errorf("bench: NATS: %w", err)
	}
	r.starts, err = jetstream.New(r.pc, jetstream.WithPublishAsyncMaxPending(4096), jetstream.WithPublishAsyncTimeout(notification.AckTimeout))
	return r, err
}

func (r *rig) close() {
	if r.pc != nil {
		r.pc.Close()
	}
	r.stop()
	r.env.close()
}

// watch subscribes each handler to its subject; the returned func
// unsubscribes. Nothing is dropped for a slow subscriber: a dropped send
// would count as lost.
func (r *rig) watch(handlers map[string]nats.MsgHandler) (func(), error) {
	var subs []*nats.Subscription
	unsubscribe := func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}
	for subject, handle := range handlers {
		s, err := r.nc.Subscribe(subject, handle)
		if err == nil {
			err = s.SetPendingLimits(-1, -1)
		}
		if err != nil {
			unsubscribe()
			return nil, fmt.Errorf("bench: watching %s: %w", subject, err)
		}
		subs = append(subs, s)
	}
	return unsubscribe, r.nc.Flush()
}

// startMsg is a run's start as the router publishes it: a RunStart on
// runs.in.<tenant>, the run's id its Nats-Msg-Id.
func startMsg(start router.RunStart) (*nats.Msg, error) {
	body, err := json.Marshal(router.RunMessage{Kind: router.RunStartKind, Start: &start})
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(router.RunsIn(start.Tenant))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, "run:"+start.ID)
	return msg, nil
}

// awaitRuns calls tick about four times a second with how many runs
// started and how many are done, until want are done or neither moved
// for timeout.
func awaitRuns(ctx context.Context, timeout time.Duration, want int, counts func() (started, done int), tick func(started, done int)) error {
	last, lastChange := -1, time.Now()
	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	for {
		started, done := counts()
		tick(started, done)
		if started+done != last {
			last, lastChange = started+done, time.Now()
		}
		if done >= want || time.Since(lastChange) > timeout {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}
