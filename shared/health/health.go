// Package health serves a process's liveness and readiness: /healthz answers
// while the process runs; /readyz runs every registered check (NATS
// connected, streams present, Redis reachable…) and answers 503 naming the
// ones that fail.
package health

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Check reports whether one dependency is usable.
type Check func(ctx context.Context) error

// Checks is a set of named readiness checks, safe for concurrent use.
type Checks struct {
	mu     sync.Mutex
	checks map[string]Check
	// notes say more of a passing check in /readyz ("ok: master …").
	notes map[string]func() string
}

// Note adds what a passing check's line in /readyz says after "ok": the
// Redis master now, say. An empty note says nothing more.
func (c *Checks) Note(name string, note func() string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.notes == nil {
		c.notes = map[string]func() string{}
	}
	c.notes[name] = note
}

func (c *Checks) note(name string) string {
	c.mu.Lock()
	note := c.notes[name]
	c.mu.Unlock()
	if note == nil {
		return ""
	}
	return note()
}

// Add registers a check under name, replacing any with that name.
func (c *Checks) Add(name string, check Check) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checks == nil {
		c.checks = map[string]Check{}
	}
	c.checks[name] = check
}

// Run runs every check concurrently and returns each one's result by name:
// nil for those that pass.
func (c *Checks) Run(ctx context.Context) map[string]error {
	c.mu.Lock()
	checks := make(map[string]Check, len(c.checks))
	for k, v := range c.checks {
		checks[k] = v
	}
	c.mu.Unlock()

	var mu sync.Mutex
	var wg sync.WaitGroup
	results := make(map[string]error, len(checks))
	for name, check := range checks {
		wg.Go(func() {
			err := check(ctx)
			mu.Lock()
			results[name] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	return results
}

// report is the JSON /readyz answers with.
type report struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}

// ReadyHandler runs the checks with a 2 s budget: 200 when all pass,
// 503 otherwise, with each check's result in the body.
func (c *Checks) ReadyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		rep := report{Status: "ready", Checks: map[string]string{}}
		for name, err := range c.Run(ctx) {
			rep.Checks[name] = "ok"
			if note := c.note(name); note != "" {
				rep.Checks[name] = "ok: " + note
			}
			if err != nil {
				rep.Checks[name] = err.Error()
				rep.Status = "not ready"
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if rep.Status != "ready" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(rep)
	})
}

// LiveHandler answers 200 while the process can serve HTTP at all.
func LiveHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"alive"}` + "\n"))
	})
}
