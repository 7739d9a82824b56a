package delivery

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/services/delivery/email"
)

// chain is one try: a pass over the providers in order, stopping at the
// first that accepts. A permanent refusal ends the pass at once — the next
// provider would refuse the same address or content.
type chain []Provider

// send returns the receipt of the provider that accepted, or every
// provider's error joined. The error is permanent if the pass ended on a
// permanent refusal.
func (c chain) send(ctx context.Context, msg email.Message) (email.Receipt, error) {
	var errs []error
	for _, p := range c {
		r, err := p.Send(ctx, msg)
		if err == nil && r.MessageID == "" {
			err = errors.New("accepted without a message id")
		}
		if err == nil {
			r.Provider = p.Name
			return r, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
		if email.IsPermanent(err) || ctx.Err() != nil {
			break
		}
	}
	return email.Receipt{}, errors.Join(errs...)
}
