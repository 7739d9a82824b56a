package alert

import (
	"context"
	"time"
)

// Clock is the time an Aggregator reads and the timers it sets: its windows,
// retry delays, send and flush timeouts. Tests pass a fake one to drive them
// without waiting for them.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless stop
	// is called first; stop reports whether it prevented the call.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// systemClock is the runtime's clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// after returns a channel that receives once d has passed on c, and a stop
// that cancels it. The channel has room for its one value, so an alarm
// nobody reads any more leaves no goroutine behind.
func after(c Clock, d time.Duration) (<-chan struct{}, func() bool) {
	ch := make(chan struct{}, 1)
	return ch, c.AfterFunc(d, func() { ch <- struct{}{} })
}

// sleep waits for d on c, and reports false if ctx ended first.
func sleep(ctx context.Context, c Clock, d time.Duration) bool {
	done, stop := after(c, d)
	defer stop()
	select {
	case <-ctx.Done():
		return false
	case <-done:
		return true
	}
}

// withTimeout is context.WithTimeout timed by c.
func withTimeout(ctx context.Context, c Clock, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := c.(systemClock); ok {
		// A real deadline also bounds what reads ctx.Deadline, such as dialing.
		return context.WithTimeout(ctx, d)
	}
	// net/http reports context.Cause, so the error reads as a deadline
	// exceeded, as it does on the system clock.
	ctx, cancel := context.WithCancelCause(ctx)
	stop := c.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return ctx, func() {
		stop()
		cancel(context.Canceled)
	}
}
