package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Action is what Apply did with one declaration.
type Action string

const (
	Created   Action = "created"
	Updated   Action = "updated"
	Unchanged Action = "unchanged"
	Refused   Action = "refused"
	// Template: a consumer not created because consumers are made from it
	// per tenant (Options.Templates).
	Template Action = "template"
	// Removed: a consumer that overlaps what the declarations now make on
	// a work queue, which the server refuses. Either one made per tenant
	// from a declared durable (<durable>_<tenant>) whose stream is no
	// longer a template (back to first come, first served), or a declared
	// durable of a stream that now is one (on to per tenant: a FIFO
	// deployment made it). Its unacknowledged messages go to the consumers
	// that replace it.
	Removed Action = "removed"

	// What Check reports, changing nothing: Missing would be created,
	// Differs updated (Changes says how), Extra removed.
	Missing Action = "missing"
	Differs Action = "differs"
	Extra   Action = "extra"
)

// Result is the outcome of applying one stream or consumer.
type Result struct {
	Kind    string // "stream" or "consumer"
	Stream  string
	Name    string
	File    string
	Action  Action
	Changes []string // "field: server → declared", for Updated and Refused
	Err     error    // set when Action is Refused
}

func (r Result) String() string {
	name := r.Stream
	if r.Kind == "consumer" {
		name += " > " + r.Name
	}
	s := fmt.Sprintf("%-9s %-8s %s", r.Action, r.Kind, name)
	for _, c := range r.Changes {
		s += "\n            " + c
	}
	if r.Err != nil {
		s += "\n            " + r.Err.Error()
	}
	switch r.Action {
	case Template:
		s += " (made per tenant from this declaration: scheduling.fair)"
	case Removed, Extra:
		s += " " + r.switchNote()
	}
	return s
}

// switchNote says which way a Removed or Extra consumer's stream switches,
// and where its unacknowledged messages go.
func (r Result) switchNote() string {
	if _, perTenant := DurableOf(r.Name); perTenant {
		if r.Action == Extra {
			return "(made per tenant while scheduling.fair was on: apply removes it, and the durable takes its unacknowledged messages)"
		}
		return "(per tenant → first come, first served: its unacknowledged messages go to the durable)"
	}
	if r.Action == Extra {
		return "(first come, first served while scheduling.fair is on: apply removes it, and the tenants' consumers take its unacknowledged messages)"
	}
	return "(first come, first served → per tenant: its unacknowledged messages go to the tenants' consumers)"
}

// Report is every result of one Apply, in declaration order.
type Report []Result

// Err joins the refusals, naming each declaration file and the server's
// reason; nil when everything now matches the declarations.
func (r Report) Err() error {
	var errs []error
	for _, res := range r {
		if res.Action == Refused {
			errs = append(errs, fmt.Errorf("streams/%s: %w", res.File, res.Err))
		}
	}
	return errors.Join(errs...)
}

// Refused counts the declarations the server refused.
func (r Report) Refused() int {
	n := 0
	for _, res := range r {
		if res.Action == Refused {
			n++
		}
	}
	return n
}

// Options adjust declarations to a deployment.
type Options struct {
	// Replicas overrides num_replicas of every stream, for clustered
	// deployments (3 in production). Defaults to the declared value.
	Replicas int
	// MaxAge overrides max_age of the named streams: how long a message is
	// kept, which for a key-value bucket or object store is how long an
	// entry outlives its last write (0 keeps it forever). Streams not named
	// keep their declared value; naming an undeclared stream is an error.
	MaxAge map[string]time.Duration
	// Templates are the streams whose declared consumers are not created:
	// they are the templates of consumers made per tenant
	// (scheduling.fair: NOTIFY, DOCS). A declared durable found on the
	// server is removed: a deployment serving first come, first served made
	// it, and on a work queue it would overlap the tenants' consumers.
	Templates []string
}

// adjust applies the options to the declarations.
func (o Options) adjust(all []Stream) error {
	for name := range o.MaxAge {
		if !slices.ContainsFunc(all, func(s Stream) bool { return s.Config.Name == name }) {
			return fmt.Errorf("streams: max_age given for %s, which is not declared", name)
		}
	}
	for i := range all {
		if o.Replicas > 0 {
			all[i].Config.Replicas = o.Replicas
		}
		if age, ok := o.MaxAge[all[i].Config.Name]; ok {
			all[i].Config.MaxAge = age
		}
	}
	return nil
}

// Apply makes the server match the declarations: it creates what is missing
// and updates what differs. A change the server refuses (retention or
// storage of an existing stream, say) is reported as Refused with the
// differing fields; the report's Err says so. The returned error is for
// failures to talk to the server at all.
func Apply(ctx context.Context, js jetstream.JetStream, opts Options) (Report, error) {
	return run(ctx, js, opts, true)
}

// Check reports what Apply would do, changing nothing: each declaration
// Unchanged, Missing, Differs (with the fields, server → declared) or
// Template, and Extra for the per-tenant consumers Apply would remove.
func Check(ctx context.Context, js jetstream.JetStream, opts Options) (Report, error) {
	return run(ctx, js, opts, false)
}

// Drifted counts the declarations Check found missing, differing or extra.
func (r Report) Drifted() int {
	n := 0
	for _, res := range r {
		if res.Action == Missing || res.Action == Differs || res.Action == Extra {
			n++
		}
	}
	return n
}

func run(ctx context.Context, js jetstream.JetStream, opts Options, write bool) (Report, error) {
	all, err := Load()
	if err != nil {
		return nil, err
	}
	if err := opts.adjust(all); err != nil {
		return nil, err
	}
	var report Report
	for _, s := range all {
		res, err := applyStream(ctx, js, s, write)
		if err != nil {
			return report, err
		}
		report = append(report, res)
		if errors.Is(res.Err, errNotCreated) || res.Action == Missing {
			continue // its consumers cannot exist
		}
		if !slices.Contains(opts.Templates, s.Config.Name) && s.Config.Retention == jetstream.WorkQueuePolicy {
			removed, err := removePerTenant(ctx, js, s, write)
			report = append(report, removed...)
			if err != nil {
				return report, err
			}
		}
		for _, c := range s.Consumers {
			apply := applyConsumer
			if slices.Contains(opts.Templates, s.Config.Name) {
				apply = removeShared
			}
			res, err := apply(ctx, js, c, write)
			if err == nil && write && isWorkQueue(s) && errors.Is(res.Err, errNotCreated) {
				res, err = retryBesideFair(ctx, js, s, c)
			}
			if err != nil {
				return report, err
			}
			report = append(report, res)
		}
	}
	return report, nil
}

var errNotCreated = errors.New("not created")

func isWorkQueue(s Stream) bool { return s.Config.Retention == jetstream.WorkQueuePolicy }

// retryBesideFair creates durable c again after removing the per-tenant
// consumers once more: a fair replica still running (a rolling upgrade
// back to first come, first served) makes a tenant's consumer again
// between their removal and the durable's creation, and the work queue
// then refuses the durable as overlapping.
func retryBesideFair(ctx context.Context, js jetstream.JetStream, s Stream, c Consumer) (Result, error) {
	var res Result
	for range 3 {
		if _, err := removePerTenant(ctx, js, s, true); err != nil {
			return res, err
		}
		var err error
		if res, err = applyConsumer(ctx, js, c, true); err != nil || !errors.Is(res.Err, errNotCreated) {
			return res, err
		}
	}
	return res, nil
}

// removePerTenant removes the consumers a fair loop made from s's
// durables (<durable>_<tenant>), so that the durables can be made again.
func removePerTenant(ctx context.Context, js jetstream.JetStream, s Stream, write bool) ([]Result, error) {
	stream, err := js.Stream(ctx, s.Config.Name)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", s.Config.Name, err)
	}
	var out []Result
	names := stream.ConsumerNames(ctx)
	for name := range names.Name() {
		durable, perTenant := DurableOf(name)
		i := slices.IndexFunc(s.Consumers, func(c Consumer) bool { return c.Config.Durable == durable })
		if !perTenant || i < 0 {
			continue
		}
		res := Result{Kind: "consumer", Stream: s.Config.Name, Name: name, File: s.Consumers[i].File, Action: Extra}
		if write {
			if err := stream.DeleteConsumer(ctx, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
				return out, fmt.Errorf("consumer %s > %s: %w", s.Config.Name, name, err)
			}
			res.Action = Removed
		}
		out = append(out, res)
	}
	if err := names.Err(); err != nil {
		return out, fmt.Errorf("listing consumers of %s: %w", s.Config.Name, err)
	}
	return out, nil
}

// removeShared removes c, a declared durable that consumers made per
// tenant replace: a deployment serving first come, first served made it.
// Already gone, c is reported as the Template it is.
func removeShared(ctx context.Context, js jetstream.JetStream, c Consumer, write bool) (Result, error) {
	res := Result{Kind: "consumer", Stream: c.Stream, Name: c.Config.Durable, File: c.File, Action: Template}
	_, err := js.Consumer(ctx, c.Stream, c.Config.Durable)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return res, nil
	case err != nil:
		return res, fmt.Errorf("consumer %s > %s: %w", c.Stream, c.Config.Durable, err)
	case !write:
		res.Action = Extra
		return res, nil
	}
	if err := js.DeleteConsumer(ctx, c.Stream, c.Config.Durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return res, fmt.Errorf("consumer %s > %s: %w", c.Stream, c.Config.Durable, err)
	}
	res.Action = Removed
	return res, nil
}

func applyStream(ctx context.Context, js jetstream.JetStream, s Stream, write bool) (Result, error) {
	res := Result{Kind: "stream", Stream: s.Config.Name, Name: s.Config.Name, File: s.File}
	stream, err := js.Stream(ctx, s.Config.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if !write {
			res.Action = Missing
			return res, nil
		}
		if _, err := js.CreateStream(ctx, s.Config); err != nil {
			return refuse(res, nil, fmt.Errorf("%w: %w", errNotCreated, err))
		}
		res.Action = Created
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("stream %s: %w", s.Config.Name, err)
	}
	changes, err := diff(s.Config, stream.CachedInfo().Config)
	if err != nil || len(changes) == 0 {
		res.Action = Unchanged
		return res, err
	}
	if !write {
		res.Action, res.Changes = Differs, changes
		return res, nil
	}
	updated, err := js.UpdateStream(ctx, s.Config)
	if err != nil {
		return refuse(res, changes, err)
	}
	return verify(res, changes, s.Config, updated.CachedInfo().Config)
}

func applyConsumer(ctx context.Context, js jetstream.JetStream, c Consumer, write bool) (Result, error) {
	res := Result{Kind: "consumer", Stream: c.Stream, Name: c.Config.Durable, File: c.File}
	cons, err := js.Consumer(ctx, c.Stream, c.Config.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		if !write {
			res.Action = Missing
			return res, nil
		}
		if _, err := js.CreateConsumer(ctx, c.Stream, c.Config); err != nil {
			return refuse(res, nil, fmt.Errorf("%w: %w", errNotCreated, err))
		}
		res.Action = Created
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("consumer %s > %s: %w", c.Stream, c.Config.Durable, err)
	}
	changes, err := diff(c.Config, cons.CachedInfo().Config)
	if err != nil || len(changes) == 0 {
		res.Action = Unchanged
		return res, err
	}
	if !write {
		res.Action, res.Changes = Differs, changes
		return res, nil
	}
	updated, err := js.UpdateConsumer(ctx, c.Stream, c.Config)
	if err != nil {
		return refuse(res, changes, err)
	}
	return verify(res, changes, c.Config, updated.CachedInfo().Config)
}

func refuse(res Result, changes []string, err error) (Result, error) {
	res.Action, res.Changes, res.Err = Refused, changes, err
	return res, nil
}

// verify checks the server kept what it accepted: a server that ignores a
// field (an older version, say) must not pass for one that applied it.
func verify(res Result, changes []string, declared, now any) (Result, error) {
	left, err := diff(declared, now)
	if err != nil {
		return res, err
	}
	if len(left) > 0 {
		return refuse(res, left, errors.New("the server accepted the update but still differs: "+strings.Join(left, "; ")))
	}
	res.Action, res.Changes = Updated, changes
	return res, nil
}
