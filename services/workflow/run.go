package workflow

import (
	"cmp"
	"context"
	"encoding/json"
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

// Bucket holds the runs (streams/KV_runs).
const Bucket = "runs"

// State is where a run is.
type State string

const (
	// Running: its next step is being taken.
	Running State = "running"
	// Waiting: a wait holds it, until its timer or an event.
	Waiting State = "waiting"
	// Done: it took its last step, or an event it waited for ended it.
	Done State = "done"
	// Cancelled: an event of its route's cancel_on ended it.
	Cancelled State = "cancelled"
	// Failed: a step could not be taken, ever (the reason is on its
	// timeline).
	Failed State = "failed"
	// Skipped: a throttle step let it go no further.
	Skipped State = "skipped"
)

// ended says whether nothing more happens to a run in state s.
func (s State) ended() bool { return s == Done || s == Cancelled || s == Failed || s == Skipped }

// Run is one recipient's way through a route's steps: a KV entry changed
// only by compare-and-set, so a timer or an event delivered twice, or two
// workers at once, move it once.
type Run struct {
	ID      string `json:"id"`
	Tenant  string `json:"tenant"`
	Subject string `json:"subject"`
	// Event is the event that started the run, structured.
	Event     json.RawMessage `json:"event"`
	StoredAt  time.Time       `json:"stored_at"`
	Route     router.Route    `json:"route"`
	Recipient event.Recipient `json:"recipient"`
	// Step is the step being taken, or the one waiting.
	Step  int   `json:"step"`
	State State `json:"state"`
	// Until is when a waiting step's timer fires.
	Until time.Time `json:"until,omitzero"`
	// Digest is the digest the run waits in, or, for a digest's own run,
	// the one it came from.
	Digest string `json:"digest,omitempty"`
	// Items are a digest's run's gathered events; Merged their runs.
	Items  []json.RawMessage `json:"items,omitempty"`
	Merged []string          `json:"merged,omitempty"`
	// Seen are the event types of the run's order that arrived while it
	// was not waiting for them: a wait for one of them ends at once.
	Seen     []string  `json:"seen,omitempty"`
	Timeline []Entry   `json:"timeline"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`

	// Statuses are the states its sends' notifications reached while it
	// was not waiting for them: a wait for one of them ends at once.
	Statuses []StepStatus `json:"statuses,omitempty"`
}

// Entry is one thing that happened to a run.
type Entry struct {
	At   time.Time `json:"at"`
	Step int       `json:"step"`
	// What happened: started, sent (its detail the notifications the
	// send planned, once the router tells them), waiting, woken, passed
	// or skipped (a throttle), merged (into a digest's run), ended,
	// cancelled, failed, done — and notified, the notifications of a send
	// whose run moved on before it was written.
	What   string `json:"what"`
	Detail string `json:"detail,omitempty"`
}

// For names whom the run is for: the subscriber, else the address.
func (r Run) For() string {
	p := r.Recipient
	return cmp.Or(p.Subscriber, p.Email, p.Phone, p.Webhook, "-")
}

// note adds an entry to the run's timeline.
func (r *Run) note(now time.Time, what, detail string) {
	r.Timeline = append(r.Timeline, Entry{At: now, Step: r.Step, What: what, Detail: detail})
	r.Updated = now
}

// cancel ends the run, by whom or what, and says whether it was waiting
// (its timer is then to be removed).
func (r *Run) cancel(now time.Time, by string) (waiting bool) {
	waiting = r.State == Waiting
	r.State, r.Until = Cancelled, time.Time{}
	r.note(now, "cancelled", "by "+by)
	return waiting
}

// Key is a run's key: its tenant, what it is about (base64url, so an
// order id never reaches another key) and its id. An order's runs are the
// keys under <tenant>.<subject>.
func Key(tenant, subject, id string) string {
	return tenant + "." + recipient.Token(subject) + "." + id
}

// store reads and writes runs by compare-and-set; stream is the
// bucket's (KV_runs), which lists its keys.
type store struct {
	kv     jetstream.KeyValue
	stream jetstream.Stream
}

// openStore binds to the runs' bucket.
func openStore(ctx context.Context, js jetstream.JetStream) (store, error) {
	kv, err := js.KeyValue(ctx, Bucket)
	if err != nil {
		return store{}, fmt.Errorf("the %s bucket: %w", Bucket, err)
	}
	stream, err := js.Stream(ctx, "KV_"+Bucket)
	if err != nil {
		return store{}, fmt.Errorf("the %s bucket's stream: %w", Bucket, err)
	}
	return store{kv: kv, stream: stream}, nil
}

// keys are the keys matching filter (a key with wildcards), sorted. They
// are the stream's subjects, asked of the server: a watch (ListKeys)
// over a bucket being written can leave its handler blocked for good.
func (s store) keys(ctx context.Context, filter string) ([]string, error) {
	prefix := "$KV." + Bucket + "."
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(prefix+filter))
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	keys := make([]string, 0, len(info.State.Subjects))
	for subject := range info.State.Subjects {
		keys = append(keys, strings.TrimPrefix(subject, prefix))
	}
	slices.Sort(keys)
	return keys, nil
}

// errConflict: the run changed since it was read.
var errConflict = errors.New("the run changed meanwhile")

func (s store) create(ctx context.Context, key string, r Run) (uint64, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	return s.kv.Create(ctx, key, body)
}

// get reads a run; jetstream.ErrKeyNotFound when there is none.
func (s store) get(ctx context.Context, key string) (Run, uint64, error) {
	e, err := s.kv.Get(ctx, key)
	if err != nil {
		return Run{}, 0, err
	}
	var r Run
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return Run{}, 0, fmt.Errorf("run %s: %w", key, err)
	}
	return r, e.Revision(), nil
}

// update writes r if the run is still at rev.
func (s store) update(ctx context.Context, key string, r Run, rev uint64) (uint64, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	next, err := s.kv.Update(ctx, key, body, rev)
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return 0, fmt.Errorf("run %s: %w", key, errConflict)
	}
	return next, err
}
