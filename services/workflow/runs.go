package workflow

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/recipient"
)

// ErrNotFound: no such run for the tenant.
var ErrNotFound = errors.New("no such run")

// ErrEnded: the run has ended; nothing is left to cancel.
var ErrEnded = errors.New("the run has ended")

// Runs is what the API and the CLI see of the runs: read, listed,
// cancelled — by the same compare-and-set the service moves them with.
type Runs struct {
	runs   store
	stream jetstream.Stream
	now    func() time.Time
}

// OpenRuns opens the runs' bucket and stream.
func OpenRuns(ctx context.Context, js jetstream.JetStream) (*Runs, error) {
	runs, err := openStore(ctx, js)
	if err != nil {
		return nil, err
	}
	stream, err := js.Stream(ctx, router.RunsStream)
	if err != nil {
		return nil, fmt.Errorf("the %s stream: %w", router.RunsStream, err)
	}
	return &Runs{runs: runs, stream: stream, now: func() time.Time { return time.Now().UTC() }}, nil
}

// Filter selects runs to list.
type Filter struct {
	// Subject is the order (or event) the runs are about.
	Subject string
	// Subscriber is the subscriber id a run is for.
	Subscriber string
	// State is the runs' state.
	State State
	// Cursor is the key to list after: the Next of the page before.
	Cursor string
	// Limit is the page's size, 1 to 100. Defaults to 50.
	Limit int
}

// Page is a page of runs, by key; Next lists the page after.
type Page struct {
	Runs []Run
	Next string
}

// maxScan bounds the runs one page reads to find its Limit: a filter that
// matches few returns a short page, and Next to go on.
const maxScan = 1000

// List lists the tenant's runs, by key (so an order's runs together).
func (r *Runs) List(ctx context.Context, tenant string, f Filter) (Page, error) {
	if !event.ValidTenant(tenant) {
		return Page{}, nil // a wildcard would reach every tenant's
	}
	f.Limit = min(cmp.Or(f.Limit, 50), 100)
	filter := tenant + ".>"
	if f.Subject != "" {
		filter = tenant + "." + recipient.Token(f.Subject) + ".*"
	}
	keys, err := r.runs.keys(ctx, filter)
	if err != nil {
		return Page{}, err
	}
	from, _ := slices.BinarySearch(keys, f.Cursor)
	if from < len(keys) && keys[from] == f.Cursor {
		from++
	}
	var page Page
	for i, key := range keys[from:] {
		if len(page.Runs) == f.Limit || i == maxScan {
			page.Next = keys[from+i-1]
			break
		}
		run, _, err := r.runs.get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return Page{}, err
		}
		if (f.State == "" || run.State == f.State) && (f.Subscriber == "" || run.Recipient.Subscriber == f.Subscriber) {
			page.Runs = append(page.Runs, run)
		}
	}
	return page, nil
}

// find is the key of the tenant's run id.
func (r *Runs) find(ctx context.Context, tenant, id string) (string, error) {
	if !validRunID(id) || !event.ValidTenant(tenant) {
		return "", ErrNotFound
	}
	keys, err := r.runs.keys(ctx, tenant+".*."+id)
	if err != nil {
		return "", err
	}
	if len(keys) == 0 {
		return "", ErrNotFound
	}
	return keys[0], nil
}

// validRunID: run_ and 32 lowercase hex digits — nothing else reaches a
// key filter.
func validRunID(id string) bool {
	hexPart, ok := strings.CutPrefix(id, "run_")
	return ok && len(hexPart) == 32 && strings.Trim(hexPart, "0123456789abcdef") == ""
}

// Get reads the tenant's run id.
func (r *Runs) Get(ctx context.Context, tenant, id string) (Run, error) {
	key, err := r.find(ctx, tenant, id)
	if err != nil {
		return Run{}, err
	}
	run, _, err := r.runs.get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Run{}, ErrNotFound
	}
	return run, err
}

// Cancel ends the tenant's run id, saying by whom; a waiting step's timer
// is removed. A run that has ended is ErrEnded.
func (r *Runs) Cancel(ctx context.Context, tenant, id, by string) (Run, error) {
	key, err := r.find(ctx, tenant, id)
	if err != nil {
		return Run{}, err
	}
	for {
		run, rev, err := r.runs.get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return Run{}, ErrNotFound
		}
		if err != nil {
			return Run{}, err
		}
		if run.State.ended() {
			return run, ErrEnded
		}
		waiting := run.cancel(r.now(), by)
		if _, err = r.runs.update(ctx, key, run, rev); errors.Is(err, errConflict) {
			continue
		}
		if err != nil {
			return Run{}, err
		}
		if waiting {
			return run, unschedule(ctx, r.stream, run)
		}
		return run, nil
	}
}
