package emailtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email"
)

// Deadline returns a context whose deadline passes when expire is called,
// not at an instant of the wall clock: a test ends a send at the step it
// means to (once the fake holds the request), however slow the machine is to
// get there. Once expired, Err is context.DeadlineExceeded, as a real
// deadline's would be.
func Deadline(parent context.Context) (ctx context.Context, expire func()) {
	inner, cancel := context.WithCancelCause(parent)
	return expiring{inner}, func() { cancel(context.DeadlineExceeded) }
}

type expiring struct{ context.Context }

// Deadline is far off: code that derives its own timeouts from it must not
// end the send before the test does.
func (e expiring) Deadline() (time.Time, bool) {
	if d, ok := e.Context.Deadline(); ok {
		return d, true
	}
	return time.Now().Add(time.Hour), true
}

func (e expiring) Err() error {
	err := e.Context.Err()
	if err != nil && errors.Is(context.Cause(e.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}

// SendInBackground starts p.Send and returns a wait for its error, for
// tests that end the send's context while it runs. wait fails the test if
// Send has not returned 10 s after wait is called: it must give up with its
// context, not when the fake lets go.
func SendInBackground(t *testing.T, ctx context.Context, p email.Provider, msg email.Message) (wait func() error) {
	t.Helper()
	sent := make(chan error, 1)
	go func() {
		_, err := p.Send(ctx, msg)
		sent <- err
	}()
	return func() error {
		t.Helper()
		select {
		case err := <-sent:
			return err
		case <-time.After(10 * time.Second):
			require.Fail(t, "Send did not return once its context ended")
			return nil
		}
	}
}
