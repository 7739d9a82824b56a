package email

import (
	"context"

	"github.com/heraldhq/herald/shared/provider"
)

// Provider hands a message to one email service.
//
// Send returns a Receipt only when the provider accepted the message and
// said so with a message id; anything less is an error, classified as the
// provider package says (provider.Permanent, provider.TransientError).
type Provider interface {
	Send(ctx context.Context, msg Message) (provider.Receipt, error)
}
