package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/inbox"
)

// hub is the API process's one follower of every feed's change log: it
// hands each change to the streams open on that feed. A stream that
// cannot take a change at once is dropped, never waited for: its browser
// resumes with Last-Event-ID.
type hub struct {
	mu      sync.Mutex
	feeds   map[feed]map[*follower]struct{}
	open    int
	max     int
	perFeed int
	buffer  int
	stop    func()
}

// follower is one open stream.
type follower struct {
	// changes are shared by every stream on the feed, read-only: a
	// pointer, so a stream's buffer is 8 bytes a change.
	changes chan *inbox.Change
	// gone is closed when the hub drops the stream, or closes.
	gone chan struct{}
}

var (
	errFeedStreams = errors.New("too many streams open on this inbox")
	errHubStreams  = errors.New("too many inbox streams open on this server")
)

func newHub(cfg Config) *hub {
	return &hub{feeds: map[feed]map[*follower]struct{}{}, max: cfg.InboxStreams, perFeed: cfg.InboxStreamsPerSubscriber,
		buffer: cfg.InboxStreamBuffer}
}

// openInbox binds the inbox and starts the process's one follower of its
// change log, when the inbox is configured.
func (s *Service) openInbox(ctx context.Context, st *stores) error {
	if s.cfg.InboxTokens == nil {
		return nil
	}
	var err error
	if st.inbox, err = inbox.Open(ctx, s.js); err != nil {
		return err
	}
	st.hub = newHub(s.cfg)
	return st.hub.follow(context.WithoutCancel(ctx), s.js)
}

// follow starts the one follower of the change log.
func (h *hub) follow(ctx context.Context, js jetstream.JetStream) error {
	stop, err := inbox.Follow(ctx, js, h.wants, h.deliver)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.stop = stop
	h.mu.Unlock()
	return nil
}

// join opens a stream on f, within the caps.
func (h *hub) join(f feed) (*follower, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.feeds == nil:
		return nil, errHubStreams
	case h.open >= h.max:
		return nil, errHubStreams
	case len(h.feeds[f]) >= h.perFeed:
		return nil, errFeedStreams
	}
	fl := &follower{changes: make(chan *inbox.Change, h.buffer), gone: make(chan struct{})}
	if h.feeds[f] == nil {
		h.feeds[f] = map[*follower]struct{}{}
	}
	h.feeds[f][fl] = struct{}{}
	h.open++
	return fl, nil
}

// leave closes a stream the hub may already have dropped.
func (h *hub) leave(f feed, fl *follower) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removeLocked(f, fl)
}

func (h *hub) removeLocked(f feed, fl *follower) bool {
	if _, ok := h.feeds[f][fl]; !ok {
		return false
	}
	delete(h.feeds[f], fl)
	if len(h.feeds[f]) == 0 {
		delete(h.feeds, f)
	}
	h.open--
	return true
}

// wants is asked before a change is decoded: only feeds someone follows.
func (h *hub) wants(tenant, sub string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.feeds[feed{tenant, sub}]) > 0
}

// deliver hands c to every stream on its feed, dropping those that are
// full rather than waiting for them.
func (h *hub) deliver(c inbox.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := feed{c.Tenant, c.Subscriber}
	for fl := range h.feeds[f] {
		select {
		case fl.changes <- &c:
		default:
			h.removeLocked(f, fl)
			close(fl.gone)
		}
	}
}

// close stops following and drops every stream.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop != nil {
		h.stop()
	}
	for f, fls := range h.feeds {
		for fl := range fls {
			h.removeLocked(f, fl)
			close(fl.gone)
		}
	}
	h.feeds = nil
}

type inboxStreamInput struct {
	Token       string `query:"token" doc:"The subscriber token, for EventSource only (it cannot send headers); send Authorization: Bearer otherwise. A URL ends up in logs."`
	LastEventID string `header:"Last-Event-ID" doc:"The id of the last event seen: the stream first sends what came after it."`
	LastEventQ  string `query:"last_event_id" doc:"Last-Event-ID, for EventSource's first connection only (it sends the header on its reconnects)."`
}

func registerInboxStream(s *Service, op func(id, method, path, summary string, errs ...int) huma.Operation) {
	o := op(streamOperation, http.MethodGet, "/v1/inbox/stream", "Follow the inbox (Server-Sent Events)",
		http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusServiceUnavailable)
	o.Description += " Events: item ({item}), state ({items: [{id, seen_at, read_at, archived_at}], dropped: [ids], counts}), " +
		"sync ({items, counts}: reload the feed); each with id: its sequence; `: ping` comments keep it open."
	o.Responses = map[string]*huma.Response{"200": {Description: "The event stream.",
		Content: map[string]*huma.MediaType{"text/event-stream": {Schema: &huma.Schema{Type: "string"}}}}}
	huma.Register(s.api, o, s.inboxStream)
}

func (s *Service) inboxStream(ctx context.Context, in *inboxStreamInput) (*huma.StreamResponse, error) {
	st, err := s.inbox()
	if err != nil {
		return nil, err
	}
	last, resume, err := lastEventID(in)
	if err != nil {
		return nil, err
	}
	f := inboxFeed(ctx)
	fl, err := st.hub.join(f)
	switch {
	case errors.Is(err, errFeedStreams):
		return nil, retryIn(huma.Error429TooManyRequests(err.Error()+"; close one"), 30)
	case err != nil:
		return nil, retryIn(huma.Error503ServiceUnavailable(err.Error()+"; try again"), retryAfter)
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		defer st.hub.leave(f, fl)
		w := newSSE(hctx)
		if resume {
			var ok bool
			if last, ok = s.catchUp(hctx.Context(), st, w, f, last); !ok {
				return
			}
		}
		s.relay(hctx.Context(), w, fl, last)
	}}, nil
}

// lastEventID is where a stream resumes from, if it does.
func lastEventID(in *inboxStreamInput) (uint64, bool, error) {
	v, where := in.LastEventID, "header.Last-Event-ID"
	if v == "" {
		v, where = in.LastEventQ, "query.last_event_id"
	}
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, false, huma.Error422UnprocessableEntity("the last event id is not one this stream sent",
			&huma.ErrorDetail{Location: where, Value: v, Message: "an event id is a number"})
	}
	return n, true, nil
}

// catchUp sends what the feed changed after last; the stream's follower
// joined before, so nothing written meanwhile is missed, and relay skips
// what this already sent.
func (s *Service) catchUp(ctx context.Context, st *stores, w *sse, f feed, last uint64) (uint64, bool) {
	cctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	missed, err := st.inbox.Since(cctx, f.tenant, f.sub, last)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "inbox unavailable", "error", err)
		return last, false
	}
	for _, c := range missed {
		if w.change(s, c) != nil {
			return last, false
		}
		last = max(last, c.Seq)
	}
	return last, w.flush() == nil
}

// relay sends the live changes after last, and a ping when idle, until the
// browser leaves, the hub drops the stream, or the API stops.
func (s *Service) relay(ctx context.Context, w *sse, fl *follower, last uint64) {
	ping := time.NewTicker(s.cfg.InboxHeartbeat)
	defer ping.Stop()
	if w.comment("connected") != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-fl.gone:
			return
		case <-ping.C:
			if w.comment("ping") != nil {
				return
			}
		case c := <-fl.changes:
			if c.Seq <= last {
				continue // sent by catchUp
			}
			last = c.Seq
			if w.change(s, *c) != nil || w.flush() != nil {
				return
			}
		}
	}
}

// sse writes Server-Sent Events, each within a deadline so that a browser
// that stopped reading does not hold the stream's goroutine.
type sse struct {
	w  io.Writer
	rc *http.ResponseController
}

// writeTimeout bounds one write to a stream.
const writeTimeout = 10 * time.Second

func newSSE(ctx huma.Context) *sse {
	ctx.SetHeader("Content-Type", "text/event-stream")
	ctx.SetHeader("Cache-Control", "no-store")
	ctx.SetHeader("X-Accel-Buffering", "no")
	ctx.SetStatus(http.StatusOK)
	w := &sse{w: ctx.BodyWriter()}
	if rw, ok := w.w.(http.ResponseWriter); ok {
		w.rc = http.NewResponseController(rw)
	}
	return w
}

func (w *sse) flush() error {
	if w.rc == nil {
		return nil
	}
	return w.rc.Flush()
}

func (w *sse) write(frame string) error {
	if w.rc != nil {
		_ = w.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	}
	_, err := io.WriteString(w.w, frame)
	return err
}

func (w *sse) comment(text string) error {
	if err := w.write(": " + text + "\n\n"); err != nil {
		return err
	}
	return w.flush()
}

// change writes c as its event.
func (w *sse) change(s *Service, c inbox.Change) error {
	kind, data := s.eventOf(c)
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return w.write(fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", c.Seq, kind, b))
}

// InboxItemState is an item's state in a state or sync event.
type InboxItemState struct {
	ID         string     `json:"id"`
	SeenAt     *time.Time `json:"seen_at,omitempty"`
	ReadAt     *time.Time `json:"read_at,omitempty"`
	ArchivedAt *time.Time `json:"archived_at,omitempty"`
}

type itemEvent struct {
	Item InboxItem `json:"item"`
	// Dropped are the items the feed's cap or retention dropped as it
	// took this one; Counts are the counts with it.
	Dropped []string    `json:"dropped,omitempty"`
	Counts  InboxCounts `json:"counts"`
}

type stateEvent struct {
	Items   []InboxItemState `json:"items"`
	Dropped []string         `json:"dropped,omitempty"`
	Counts  InboxCounts      `json:"counts"`
}

// eventOf is a change as the browser's event: its name and data.
func (s *Service) eventOf(c inbox.Change) (string, any) {
	if c.Kind == inbox.KindItem {
		return string(inbox.KindItem), itemEvent{Item: s.inboxItemOf(*c.Item, time.Now()), Dropped: c.Dropped, Counts: InboxCounts(c.Counts)}
	}
	ev := stateEvent{Items: make([]InboxItemState, len(c.States)), Dropped: c.Dropped, Counts: InboxCounts(c.Counts)}
	for i, st := range c.States {
		ev.Items[i] = InboxItemState{ID: st.ID, SeenAt: st.SeenAt, ReadAt: st.ReadAt, ArchivedAt: st.ArchivedAt}
	}
	return string(c.Kind), ev
}
