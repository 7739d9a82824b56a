package inboxweb_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/heraldhq/herald/services/api/inboxweb"
)

// item is the inbox API's item as the component reads it.
type item struct {
	ID          string     `json:"id"`
	Title       string     `json:"title"`
	Body        string     `json:"body,omitempty"`
	ActionURL   string     `json:"action_url,omitempty"`
	DocumentURL string     `json:"document_url,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	SeenAt      *time.Time `json:"seen_at,omitempty"`
	ReadAt      *time.Time `json:"read_at,omitempty"`
	ArchivedAt  *time.Time `json:"archived_at,omitempty"`
}

type counts struct {
	Unseen int `json:"unseen"`
	Unread int `json:"unread"`
	Total  int `json:"total"`
}

// fakeInbox is one subscriber's inbox behind the HTTP contract the
// component speaks, in memory: the component's own test, not the API's.
type fakeInbox struct {
	token string

	mu       sync.Mutex
	items    []*item // newest first
	posts    []string
	frames   chan string // SSE frames for the open stream; "" ends it
	connects chan string // each stream request's Last-Event-ID
}

func newFakeInbox(token string, items ...*item) *fakeInbox {
	return &fakeInbox{token: token, items: items, frames: make(chan string), connects: make(chan string, 16)}
}

func (f *fakeInbox) routes(page http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	for _, p := range inboxweb.Paths() {
		mux.Handle("GET "+p, inboxweb.Handler())
	}
	mux.Handle("GET /", page)
	mux.Handle("GET /v1/inbox/counts", f.auth(f.counts))
	mux.Handle("GET /v1/inbox/items", f.auth(f.list))
	mux.Handle("POST /v1/inbox/items/{id}/{action}", f.auth(f.act))
	mux.Handle("POST /v1/inbox/read-all", f.auth(f.readAll))
	mux.Handle("GET /v1/inbox/stream", f.auth(f.stream))
	return mux
}

func (f *fakeInbox) auth(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeInbox) countsLocked() counts {
	var c counts
	for _, it := range f.items {
		if it.ArchivedAt != nil {
			continue
		}
		c.Total++
		if it.SeenAt == nil {
			c.Unseen++
		}
		if it.ReadAt == nil {
			c.Unread++
		}
	}
	return c
}

func (f *fakeInbox) counts(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	writeJSON(w, f.countsLocked())
}

// list pages with the offset as its cursor.
func (f *fakeInbox) list(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	from, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	var live []*item
	for _, it := range f.items {
		if it.ArchivedAt == nil {
			live = append(live, it)
		}
	}
	page := map[string]any{"items": live[min(from, len(live)):min(from+limit, len(live))]}
	if from+limit < len(live) {
		page["next_cursor"] = strconv.Itoa(from + limit)
	}
	writeJSON(w, page)
}

func (f *fakeInbox) act(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts = append(f.posts, r.PathValue("action")+" "+r.PathValue("id"))
	for _, it := range f.items {
		if it.ID != r.PathValue("id") {
			continue
		}
		now := time.Now()
		switch r.PathValue("action") {
		case "read":
			it.ReadAt, it.SeenAt = &now, &now
		case "seen":
			it.SeenAt = &now
		case "archive":
			it.ArchivedAt = &now
		}
		writeJSON(w, it)
		return
	}
	http.NotFound(w, r)
}

func (f *fakeInbox) readAll(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts = append(f.posts, "read-all")
	now, n := time.Now(), 0
	for _, it := range f.items {
		if it.ReadAt == nil {
			it.ReadAt, it.SeenAt = &now, &now
			n++
		}
	}
	writeJSON(w, map[string]int{"read": n})
}

func (f *fakeInbox) stream(w http.ResponseWriter, r *http.Request) {
	f.connects <- r.Header.Get("Last-Event-ID")
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, ": hello\n\n")
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case frame := <-f.frames:
			if frame == "" {
				return
			}
			_, _ = fmt.Fprint(w, frame)
			_ = rc.Flush()
		}
	}
}

// push adds an item as a delivery would and sends it on the open stream.
func (f *fakeInbox) push(id string, it *item) {
	f.mu.Lock()
	f.items = append([]*item{it}, f.items...)
	data, _ := json.Marshal(map[string]any{"item": it, "counts": f.countsLocked()})
	f.mu.Unlock()
	f.frames <- fmt.Sprintf("id: %s\nevent: item\ndata: %s\n\n", id, data)
}

// elsewhere reads or archives an item as another of the subscriber's tabs
// would and sends the change on the open stream.
func (f *fakeInbox) elsewhere(eventID, id, action string) {
	f.mu.Lock()
	now := time.Now()
	var changed []map[string]any
	for _, it := range f.items {
		if it.ID != id {
			continue
		}
		switch action {
		case "read":
			it.ReadAt, it.SeenAt = &now, &now
			changed = append(changed, map[string]any{"id": id, "read_at": now, "seen_at": now})
		case "archive":
			it.ArchivedAt = &now
			changed = append(changed, map[string]any{"id": id, "archived_at": now})
		}
	}
	data, _ := json.Marshal(map[string]any{"items": changed, "counts": f.countsLocked()})
	f.mu.Unlock()
	f.frames <- fmt.Sprintf("id: %s\nevent: state\ndata: %s\n\n", eventID, data)
}

// dropItem drops an item as the feed's cap would and sends the change on
// the open stream.
func (f *fakeInbox) dropItem(eventID, id string) {
	f.mu.Lock()
	for i, it := range f.items {
		if it.ID == id {
			f.items = append(f.items[:i], f.items[i+1:]...)
			break
		}
	}
	data, _ := json.Marshal(map[string]any{"items": []any{}, "dropped": []string{id}, "counts": f.countsLocked()})
	f.mu.Unlock()
	f.frames <- fmt.Sprintf("id: %s\nevent: state\ndata: %s\n\n", eventID, data)
}

// add writes items without telling the stream.
func (f *fakeInbox) add(items ...*item) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items = append(items, f.items...)
}

// sync adds an item without telling the stream, then sends the state a
// resumed stream would: the component must read the feed again.
func (f *fakeInbox) sync(eventID string, it *item) {
	f.mu.Lock()
	f.items = append([]*item{it}, f.items...)
	data, _ := json.Marshal(map[string]any{"items": []map[string]any{{"id": it.ID}}, "counts": f.countsLocked()})
	f.mu.Unlock()
	f.frames <- fmt.Sprintf(": heartbeat\n\nid: %s\nevent: sync\ndata: %s\n\n", eventID, data)
}

// drop ends the open stream, as a proxy's timeout would.
func (f *fakeInbox) drop() { f.frames <- "" }

func (f *fakeInbox) posted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.posts...)
}
