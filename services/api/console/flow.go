package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/circuits"
)

// flowInterval is how often the live flow is sent.
const flowInterval = 2 * time.Second

// flow is the state of every stream and its consumers at one moment.
type flow struct {
	At      time.Time    `json:"at"`
	Streams []streamFlow `json:"streams"`
	// DLQ is the dead letters kept.
	DLQ uint64 `json:"dlq"`
	// Circuits are the providers' breakers each delivery process reported
	// in the last hour; none means every one closed.
	Circuits []circuits.State `json:"circuits"`
}

type streamFlow struct {
	Name     string `json:"name"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	// LastSeq counts every message ever stored: its rate is messages in.
	LastSeq uint64 `json:"last_seq"`
	// InRate is messages in per second since the previous snapshot.
	InRate    float64        `json:"in_rate"`
	Consumers []consumerFlow `json:"consumers"`
}

type consumerFlow struct {
	Name        string `json:"name"`
	Pending     uint64 `json:"pending"`
	AckPending  int    `json:"ack_pending"`
	Redelivered int    `json:"redelivered"`
	// AckFloor counts the messages the consumer has finished: its rate is
	// messages out.
	AckFloor uint64  `json:"ack_floor"`
	OutRate  float64 `json:"out_rate"`
}

// readFlow reads every stream's and consumer's state. The KV buckets' and
// object stores' streams are left out: they are storage, not flow.
func (c *Console) readFlow(ctx context.Context) (flow, error) {
	f := flow{At: c.cfg.Now()}
	streams := c.js.ListStreams(ctx)
	for info := range streams.Info() {
		name := info.Config.Name
		if name == "DLQ" {
			f.DLQ = info.State.Msgs
		}
		if strings.HasPrefix(name, "KV_") || strings.HasPrefix(name, "OBJ_") {
			continue
		}
		sf := streamFlow{Name: name, Messages: info.State.Msgs, Bytes: info.State.Bytes, LastSeq: info.State.LastSeq}
		s, err := c.js.Stream(ctx, name)
		if err != nil {
			return f, err
		}
		consumers := s.ListConsumers(ctx)
		for ci := range consumers.Info() {
			if ci.Config.AckPolicy == jetstream.AckNonePolicy && ci.Config.MemoryStorage {
				continue // an ordered consumer: someone reading (a listing, a watch), not a flow
			}
			sf.Consumers = append(sf.Consumers, consumerFlow{Name: ci.Name, Pending: ci.NumPending, AckPending: ci.NumAckPending,
				Redelivered: ci.NumRedelivered, AckFloor: ci.AckFloor.Stream})
		}
		if err := consumers.Err(); err != nil {
			return f, err
		}
		slices.SortFunc(sf.Consumers, func(a, b consumerFlow) int { return strings.Compare(a.Name, b.Name) })
		f.Streams = append(f.Streams, sf)
	}
	if err := streams.Err(); err != nil {
		return f, err
	}
	var err error
	if f.Circuits, err = circuits.List(ctx, c.js); err != nil {
		return f, err
	}
	slices.SortFunc(f.Streams, func(a, b streamFlow) int { return strings.Compare(a.Name, b.Name) })
	return f, nil
}

// rates fills f's rates from the snapshot before it.
func (f *flow) rates(prev flow) {
	dt := f.At.Sub(prev.At).Seconds()
	if dt <= 0 {
		return
	}
	for i := range f.Streams {
		s := &f.Streams[i]
		j := slices.IndexFunc(prev.Streams, func(p streamFlow) bool { return p.Name == s.Name })
		if j < 0 {
			continue
		}
		p := prev.Streams[j]
		s.InRate = perSecond(s.LastSeq, p.LastSeq, dt)
		for k := range s.Consumers {
			cf := &s.Consumers[k]
			if m := slices.IndexFunc(p.Consumers, func(pc consumerFlow) bool { return pc.Name == cf.Name }); m >= 0 {
				cf.OutRate = perSecond(cf.AckFloor, p.Consumers[m].AckFloor, dt)
			}
		}
	}
}

func perSecond(now, before uint64, dt float64) float64 {
	if now < before { // the stream was recreated
		return 0
	}
	return float64(now-before) / dt
}

func (c *Console) flowPage(w http.ResponseWriter, r *http.Request, ses *session) {
	f, err := c.readFlow(r.Context())
	if err != nil {
		c.cfg.Logger.Warn("console: reading the flow", "error", err)
		c.fail(w, r, ses, http.StatusServiceUnavailable, "The streams cannot be read right now.")
		return
	}
	c.render(w, http.StatusOK, "flow.html", view{Title: "Flow", Nav: "flow", Session: ses, Data: f})
}

// flowLive sends a snapshot every flowInterval as server-sent events, with
// rates since the one before, until the browser goes away or the session
// ends.
func (c *Console) flowLive(w http.ResponseWriter, r *http.Request, ses *session) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		c.fail(w, r, ses, http.StatusInternalServerError, "This server cannot stream.")
		return
	}
	// Live for as long as the session: a stream outliving its session
	// would keep showing the flow to someone signed out.
	ctx, cancel := context.WithDeadline(r.Context(), ses.Expires)
	defer cancel()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var prev flow
	tick := time.NewTicker(flowInterval)
	defer tick.Stop()
	for {
		f, err := c.readFlow(ctx)
		if err == nil {
			f.rates(prev)
			prev = f
			b, _ := json.Marshal(f)
			_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := fmt.Fprintf(w, "event: flow\ndata: %s\n\n", b); err != nil {
				return
			}
		} else if ctx.Err() == nil {
			if _, err := fmt.Fprintf(w, "event: unavailable\ndata: {}\n\n"); err != nil {
				return
			}
		}
		flusher.Flush()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if errors.Is(c.keyLive(ctx, ses), errNoSession) {
			return // the key was revoked: the browser's reconnection is refused
		}
	}
}
