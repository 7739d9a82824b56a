package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/services/delivery/email"
)

// chain is one try: a pass over the providers in order, stopping at the
// first that accepts. A permanent refusal ends the pass at once — the next
// provider would refuse the same address or content.
type chain struct {
	providers []Provider
	timeout   time.Duration // per provider call
}

// send returns the receipt of the provider that accepted, or every
// provider's error joined. The error is permanent if the pass ended on a
// permanent refusal.
func (c chain) send(ctx context.Context, msg email.Message) (email.Receipt, error) {
	var errs []error
	for _, p := range c.providers {
		r, err := c.call(ctx, p, msg)
		if err == nil {
			return r, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
		if email.IsPermanent(err) || ctx.Err() != nil {
			break
		}
	}
	return email.Receipt{}, errors.Join(errs...)
}

func (c chain) call(ctx context.Context, p Provider, msg email.Message) (email.Receipt, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	r, err := p.Send(ctx, msg)
	switch {
	case err != nil:
		return r, err
	case r.MessageID == "":
		return r, &email.TransientError{Err: errors.New("accepted without a message id")}
	}
	r.Provider = p.Name
	return r, nil
}
