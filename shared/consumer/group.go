package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Group is the loops of one service, started one consumer at a time and
// stopped together.
type Group struct {
	loops []*Loop
}

// Start consumes the durable consumer on stream with h.
func (g *Group) Start(ctx context.Context, js jetstream.JetStream, stream, durable string, h Handler, cfg Config) error {
	c, err := js.Consumer(ctx, stream, durable)
	if err != nil {
		return fmt.Errorf("consumer %s > %s: %w", stream, durable, err)
	}
	loop, err := Start(ctx, c, h, cfg)
	if err != nil {
		return fmt.Errorf("consuming %s > %s: %w", stream, durable, err)
	}
	g.loops = append(g.loops, loop)
	return nil
}

// Stop drains every loop: messages under way finish and are settled.
func (g *Group) Stop(ctx context.Context) error {
	var errs []error
	for _, l := range g.loops {
		errs = append(errs, l.Stop(ctx))
	}
	g.loops = nil
	return errors.Join(errs...)
}
