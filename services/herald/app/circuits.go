package app

import (
	"cmp"
	"context"
	"fmt"
	"os"

	"github.com/heraldhq/herald/shared/circuits"
)

// openCircuits starts the process's board of circuit breaker states, once,
// for the first delivery service built: the console shows them.
func (a *App) openCircuits(ctx context.Context) error {
	if a.circuits.Load() != nil {
		return nil
	}
	host, _ := os.Hostname()
	process := fmt.Sprintf("%s-%d", cmp.Or(host, "herald"), os.Getpid())
	b, err := circuits.Open(ctx, a.js, process, a.logger.With("component", "circuits"))
	if err != nil {
		return err
	}
	a.circuits.Store(b)
	return nil
}

// noteCircuit is the delivery services' breakers' state changes.
func (a *App) noteCircuit(channel, provider, state string) {
	if b := a.circuits.Load(); b != nil {
		b.Note(channel, provider, state)
	}
}
