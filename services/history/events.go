package history

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/tenant"
)

// tenantSubjects are the stream subjects that name their tenant, and so
// can be purged for one tenant: events from publishers bound to it, and
// its outcomes and accepted records. Events published on orders.<name> or
// inventory.<name> name their tenant only in the body, and age out with
// the stream (7 days) for everyone.
var tenantSubjects = []struct{ stream, prefix string }{
	{"ORDERS", "orders.*."},
	{"INVENTORY", "inventory.*."},
	{StatusStream, "notify.status."},
	{StatusStream, "notify.accepted."},
}

// purgeEvents removes, for each tenant with a payload retention, its
// messages older than it from the subjects that name it — never one a
// consumer of the stream has yet to take.
func (s *Service) purgeEvents(ctx context.Context, now time.Time, own map[string]tenant.Retention, swept *Swept) error {
	for _, id := range slices.Sorted(maps.Keys(own)) {
		p := own[id].Payloads.Duration()
		if p == 0 {
			continue
		}
		for _, ts := range tenantSubjects {
			n, err := s.purgeOlder(ctx, ts.stream, ts.prefix+id, now.Add(-p))
			if err != nil {
				return err
			}
			swept.Events += int(n)
			s.removed(ctx, "events", id, int64(n))
		}
	}
	return nil
}

// purgeOlder purges subject's messages stored before cutoff, up to the
// first message a consumer of the stream still has to take, and says how
// many went.
func (s *Service) purgeOlder(ctx context.Context, streamName, subject string, cutoff time.Time) (uint64, error) {
	upTo, err := s.firstSince(ctx, streamName, subject, cutoff)
	if err != nil {
		return 0, err
	}
	taken, err := s.takenUpTo(ctx, streamName)
	if err != nil {
		return 0, err
	}
	upTo = min(upTo, taken+1)
	if upTo <= 1 {
		return 0, nil
	}
	body, _ := json.Marshal(map[string]any{"filter": subject, "seq": upTo})
	reply, err := s.js.Conn().RequestWithContext(ctx, "$JS.API.STREAM.PURGE."+streamName, body)
	if err != nil {
		return 0, fmt.Errorf("history: purging %s in %s: %w", subject, streamName, err)
	}
	var resp struct {
		Purged uint64 `json:"purged"`
		Error  *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	switch err := json.Unmarshal(reply.Data, &resp); {
	case err != nil:
		return 0, fmt.Errorf("history: purging %s in %s: unreadable answer %q", subject, streamName, reply.Data)
	case resp.Error != nil:
		return 0, fmt.Errorf("history: purging %s in %s: %s", subject, streamName, resp.Error.Description)
	}
	return resp.Purged, nil
}

// firstSince is the sequence of subject's first message stored at or
// after cutoff; when there is none, the one after the stream's last.
func (s *Service) firstSince(ctx context.Context, streamName, subject string, cutoff time.Time) (uint64, error) {
	body, _ := json.Marshal(map[string]any{"start_time": cutoff, "next_by_subj": subject})
	reply, err := s.js.Conn().RequestWithContext(ctx, "$JS.API.DIRECT.GET."+streamName, body)
	if err != nil {
		return 0, fmt.Errorf("history: %s's first message since %s: %w", subject, cutoff.Format(time.RFC3339), err)
	}
	switch status := reply.Header.Get("Status"); status {
	case "":
		return strconv.ParseUint(reply.Header.Get(jetstream.SequenceHeader), 10, 64)
	case "404":
		stream, err := s.js.Stream(ctx, streamName)
		if err != nil {
			return 0, fmt.Errorf("history: %s: %w", streamName, err)
		}
		return stream.CachedInfo().State.LastSeq + 1, nil
	default:
		return 0, fmt.Errorf("history: %s's first message since %s: status %s %s", subject, cutoff.Format(time.RFC3339),
			status, reply.Header.Get("Description"))
	}
}

// takenUpTo is the last sequence every consumer of the stream that
// acknowledges has taken: below its acknowledgement floor, unless it has
// nothing left to take at all.
func (s *Service) takenUpTo(ctx context.Context, streamName string) (uint64, error) {
	stream, err := s.js.Stream(ctx, streamName)
	if err != nil {
		return 0, fmt.Errorf("history: %s: %w", streamName, err)
	}
	taken := stream.CachedInfo().State.LastSeq
	list := stream.ListConsumers(ctx)
	for info := range list.Info() {
		if info.Config.AckPolicy == jetstream.AckNonePolicy || info.NumPending+uint64(info.NumAckPending) == 0 {
			continue
		}
		taken = min(taken, info.AckFloor.Stream)
	}
	if err := list.Err(); err != nil {
		return 0, fmt.Errorf("history: the consumers of %s: %w", streamName, err)
	}
	return taken, nil
}
