package notification

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// RunRef names the workflow run whose send step made a delivery, when a
// later wait of that run waits for the send's status (until_status): the
// run's key in KV_runs and the send's step.
type RunRef struct {
	Key  string `json:"key"`
	Step int    `json:"step"`
}

// RunStatus tells a workflow run that a notification its send step made
// reached a state (delivered: a provider accepted it).
type RunStatus struct {
	Key            string    `json:"key"`
	Step           int       `json:"step"`
	NotificationID string    `json:"notification_id"`
	State          string    `json:"state"`
	Time           time.Time `json:"time"`
}

// RunStatusKind is the kind of the workflow service's message
// (router.RunMessage) that carries a RunStatus.
const RunStatusKind = "status"

// runStatusMessage is router.RunMessage as a status fills it: the
// delivery services publish it without depending on the router.
type runStatusMessage struct {
	Kind   string    `json:"kind"`
	Status RunStatus `json:"status"`
}

// PublishRunStatus tells d's run that d reached state, on the workflow
// service's runs.in.<tenant> (router.RunsIn). Its Nats-Msg-Id names the
// notification and the state, so telling it twice (a retried outcome)
// stores it once. A delivery of no run's (d.Run nil) tells nothing.
func PublishRunStatus(ctx context.Context, js jetstream.Publisher, d Delivery, state string, at time.Time) error {
	if d.Run == nil {
		return nil
	}
	st := RunStatus{Key: d.Run.Key, Step: d.Run.Step, NotificationID: d.ID, State: state, Time: at}
	return publish(ctx, js, "runs.in."+d.Tenant, "runstatus:"+d.ID+":"+state, runStatusMessage{Kind: RunStatusKind, Status: st})
}
