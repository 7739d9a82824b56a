package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Group is the loops of one service, started one consumer at a time with
// one Config, and stopped together.
type Group struct {
	Config Config
	loops  []*Loop
}

// Lookup finds a durable consumer, with both names in the error.
func Lookup(ctx context.Context, js jetstream.JetStream, stream, durable string) (jetstream.Consumer, error) {
	c, err := js.Consumer(ctx, stream, durable)
	if err != nil {
		return nil, fmt.Errorf("consumer %s > %s: %w", stream, durable, err)
	}
	return c, nil
}

// Start consumes c with h, with the group's Config.
func (g *Group) Start(ctx context.Context, c jetstream.Consumer, h Handler) error {
	loop, err := Start(ctx, c, h, g.Config)
	if err != nil {
		info := c.CachedInfo()
		return fmt.Errorf("consuming %s > %s: %w", info.Stream, info.Name, err)
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
