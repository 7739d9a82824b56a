package router

import "github.com/heraldhq/herald/shared/notification"

// RunStatusKind is the kind of a run's message that tells it the status
// of a notification one of its send steps made (RunMessage.Status). The
// delivery services publish it (notification.PublishRunStatus).
const RunStatusKind = notification.RunStatusKind

// StatusSend is the send step whose notifications' status the wait at
// step wait waits for (until_status): the last send before it; -1 when
// there is none, or the step waits for no status.
func (r Route) StatusSend(wait int) int {
	if wait < 0 || wait >= len(r.Steps) || r.Steps[wait].Wait == nil || r.Steps[wait].Wait.UntilStatus == "" {
		return -1
	}
	for j := wait - 1; j >= 0; j-- {
		if r.Steps[j].Send != nil {
			return j
		}
	}
	return -1
}

// statusWatched says whether some wait of the route waits for the status
// of send step's notifications: only then do they name their run, and
// does the delivery service tell it of them.
func (r Route) statusWatched(step int) bool {
	for j := step + 1; j < len(r.Steps); j++ {
		if r.StatusSend(j) == step {
			return true
		}
	}
	return false
}

// runRef is what a run's send step's notifications name of their run
// (Route.Run), when a later wait waits for their status; nil otherwise,
// so the deliveries of runs that wait for no status cost nothing more.
func (req SendRequest) runRef() *notification.RunRef {
	if req.Key == "" || !req.Route.statusWatched(req.Step) {
		return nil
	}
	return &notification.RunRef{Key: req.Key, Step: req.Step}
}
