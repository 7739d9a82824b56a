package tenant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// PlansBucket is the key-value bucket declared in streams/KV_plans: the
// plans the running services use, under one key.
const PlansBucket = "plans"

// plansKey is the bucket's one key: the plans published last.
const plansKey = "current"

// ErrNoPlansPublished means no service has published the plans it runs
// with: none has started since the bucket was made.
var ErrNoPlansPublished = errors.New("no service has published its plans")

// Published are the plans a running service checks and enforces tenants'
// plans with, as it published them when it started. The command-line tools
// check a tenant's plan against these, not against whatever configuration
// they were started with, which may be none.
type Published struct {
	Plans Plans `json:"plans"`
	// By names who published them: the service and its host.
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// PublishPlans keeps p as the plans the deployment runs with, in place of
// any published before.
func PublishPlans(ctx context.Context, js jetstream.JetStream, p Published) error {
	kv, err := js.KeyValue(ctx, PlansBucket)
	if err != nil {
		return fmt.Errorf("tenant: bucket %s: %w", PlansBucket, err)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, plansKey, data); err != nil {
		return fmt.Errorf("tenant: publishing the plans to bucket %s: %w", PlansBucket, err)
	}
	return nil
}

// PublishedPlans reads the plans the running services published;
// ErrNoPlansPublished when none has, or the bucket is not there yet.
func PublishedPlans(ctx context.Context, js jetstream.JetStream) (Published, error) {
	kv, err := js.KeyValue(ctx, PlansBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return Published{}, fmt.Errorf("%w (there is no bucket %s)", ErrNoPlansPublished, PlansBucket)
	}
	if err != nil {
		return Published{}, fmt.Errorf("tenant: bucket %s: %w", PlansBucket, err)
	}
	e, err := kv.Get(ctx, plansKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Published{}, fmt.Errorf("%w to bucket %s", ErrNoPlansPublished, PlansBucket)
	}
	if err != nil {
		return Published{}, fmt.Errorf("tenant: reading the published plans: %w", err)
	}
	var p Published
	if err := json.Unmarshal(e.Value(), &p); err != nil {
		return Published{}, fmt.Errorf("tenant: the plans published to bucket %s: %w", PlansBucket, err)
	}
	if err := p.Plans.Validate(); err != nil {
		return Published{}, fmt.Errorf("tenant: the plans published to bucket %s: %w", PlansBucket, err)
	}
	return p, nil
}
