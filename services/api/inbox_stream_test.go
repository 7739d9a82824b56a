package api_test

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/inbox"
)

type sseEvent struct{ id, event, data string }

// stream is an open inbox stream, read as a browser would.
type stream struct {
	resp *http.Response
	done chan struct{}

	mu       sync.Mutex
	events   []sseEvent
	comments []string
}

// open opens the subscriber's stream; headers are name, value pairs.
func (b inboxBundle) open(t *testing.T, path, token string, headers ...string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	s := &stream{resp: resp, done: make(chan struct{})}
	t.Cleanup(func() {
		cancel()
		_ = resp.Body.Close()
		<-s.done
	})
	go s.read()
	return s
}

func (s *stream) read() {
	defer close(s.done)
	sc := bufio.NewScanner(s.resp.Body)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ": ")
		s.mu.Lock()
		switch field {
		case "":
			if line == "" && ev.event != "" {
				s.events = append(s.events, ev)
				ev = sseEvent{}
			} else if line != "" {
				s.comments = append(s.comments, value)
			}
		case "id":
			ev.id = value
		case "event":
			ev.event = value
		case "data":
			ev.data = value
		}
		s.mu.Unlock()
	}
}

func (s *stream) got() []sseEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sseEvent(nil), s.events...)
}

func (s *stream) said(comment string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.comments {
		if c == comment {
			return true
		}
	}
	return false
}

func (s *stream) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// connected waits until the stream follows its feed.
func (s *stream) connected(t *testing.T) {
	t.Helper()
	require.Equal(t, http.StatusOK, s.resp.StatusCode)
	require.Eventually(t, func() bool { return s.said("connected") }, 10*time.Second, 5*time.Millisecond)
}

// items are the ids of the item events, in order.
func (s *stream) items() []string {
	var ids []string
	for _, e := range s.got() {
		if e.event == "item" {
			_, rest, _ := strings.Cut(e.data, `"id":"`)
			id, _, _ := strings.Cut(rest, `"`)
			ids = append(ids, id)
		}
	}
	return ids
}

func (s *stream) has(event, fragment string) bool {
	for _, e := range s.got() {
		if e.event == event && strings.Contains(e.data, fragment) {
			return true
		}
	}
	return false
}

func TestInboxStreamSendsItemsAndStatesToEveryTab(t *testing.T) {
	t.Parallel()
	b := inboxSetup(t, api.Config{})
	ana, bob := b.mint(t, acmeSend, "ana"), b.mint(t, acmeSend, "bob")
	tab1 := b.open(t, "/v1/inbox/stream", ana, "Origin", acmePage)
	tab2 := b.open(t, "/v1/inbox/stream?token="+ana, "")
	bobs := b.open(t, "/v1/inbox/stream", bob)
	for _, s := range []*stream{tab1, tab2, bobs} {
		s.connected(t)
	}
	h := tab1.resp.Header
	require.Equal(t, "text/event-stream", h.Get("Content-Type"))
	require.Equal(t, "no-store", h.Get("Cache-Control"))
	require.Equal(t, "no", h.Get("X-Accel-Buffering"))
	require.Equal(t, acmePage, h.Get("Access-Control-Allow-Origin"))

	b.add(t, "acme", "ana", 0, 1)
	for _, s := range []*stream{tab1, tab2} {
		require.Eventually(t, func() bool { return len(s.items()) == 1 }, 10*time.Second, 5*time.Millisecond)
		require.Equal(t, []string{"n000"}, s.items())
		require.Contains(t, s.got()[0].data, `"title":"PO-0 shipped"`)
		_, err := strconv.ParseUint(s.got()[0].id, 10, 64)
		require.NoError(t, err)
	}
	// A read in either tab reaches both, with the counts.
	require.Equal(t, http.StatusOK, b.do(t, http.MethodPost, "/v1/inbox/items/n000/read", ana, nil).status)
	for _, s := range []*stream{tab1, tab2} {
		require.Eventually(t, func() bool { return s.has("state", `"read_at"`) }, 10*time.Second, 5*time.Millisecond)
		require.True(t, s.has("state", `"counts":{"unseen":0,"unread":0,"total":1}`))
	}
	b.add(t, "acme", "bob", 10, 11)
	require.Eventually(t, func() bool { return len(bobs.items()) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, []string{"n010"}, bobs.items())
	require.False(t, bobs.has("state", `"n000"`))
	require.Equal(t, []string{"n000"}, tab1.items())
}

func TestInboxStreamResumesFromTheLastEventOnce(t *testing.T) {
	t.Parallel()
	b := inboxSetup(t, api.Config{})
	ana := b.mint(t, acmeSend, "ana")
	first := b.open(t, "/v1/inbox/stream", ana)
	first.connected(t)
	b.add(t, "acme", "ana", 0, 1)
	require.Eventually(t, func() bool { return len(first.got()) >= 1 }, 10*time.Second, 5*time.Millisecond)
	last := first.got()[len(first.got())-1].id
	require.NoError(t, first.resp.Body.Close())
	<-first.done

	b.add(t, "acme", "ana", 1, 3)
	_, err := b.store.Mark(t.Context(), "acme", "ana", "n000", inbox.MarkRead)
	require.NoError(t, err)
	again := b.open(t, "/v1/inbox/stream", ana, "Last-Event-ID", last)
	again.connected(t)
	b.add(t, "acme", "ana", 3, 4)
	require.Eventually(t, func() bool { return len(again.items()) == 3 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, []string{"n001", "n002", "n003"}, again.items())
	require.True(t, again.has("sync", `"read_at"`))
	var prev uint64
	for _, e := range again.got() {
		seq, err := strconv.ParseUint(e.id, 10, 64)
		require.NoError(t, err)
		require.Greater(t, seq, prev, "each event once, in order")
		prev = seq
	}
	bad := b.do(t, http.MethodGet, "/v1/inbox/stream", ana, nil, "Last-Event-ID", "seven")
	require.Equal(t, http.StatusUnprocessableEntity, bad.status)
	require.Contains(t, bad.body, "header.Last-Event-ID")
}

func TestInboxStreamCaps(t *testing.T) {
	t.Parallel()
	b := inboxSetup(t, api.Config{InboxStreamsPerSubscriber: 1, InboxStreams: 2})
	ana := b.mint(t, acmeSend, "ana")
	b.open(t, "/v1/inbox/stream", ana).connected(t)
	tooMany := b.open(t, "/v1/inbox/stream", ana)
	require.Equal(t, http.StatusTooManyRequests, tooMany.resp.StatusCode)
	require.NotEmpty(t, tooMany.resp.Header.Get("Retry-After"))
	b.open(t, "/v1/inbox/stream", b.mint(t, acmeSend, "bob")).connected(t)
	full := b.open(t, "/v1/inbox/stream", b.mint(t, acmeSend, "carl"))
	require.Equal(t, http.StatusServiceUnavailable, full.resp.StatusCode)
	require.NotEmpty(t, full.resp.Header.Get("Retry-After"))
}

func TestInboxStreamPingsAndEndsWithTheAPI(t *testing.T) {
	t.Parallel()
	b := inboxSetup(t, api.Config{InboxHeartbeat: 10 * time.Millisecond})
	ana := b.mint(t, acmeSend, "ana")
	s := b.open(t, "/v1/inbox/stream", ana)
	s.connected(t)
	require.Eventually(t, func() bool { return s.said("ping") }, 10*time.Second, 5*time.Millisecond)
	// The token in the query is for the stream only.
	require.Equal(t, http.StatusUnauthorized, b.do(t, http.MethodGet, "/v1/inbox/counts?token="+ana, "", nil).status)
	require.NoError(t, b.svc.Stop(t.Context()))
	require.Eventually(t, s.ended, 10*time.Second, 5*time.Millisecond)
}
