// Package webpushtest is a fake Web Push service for tests: an HTTP server
// that accepts pushes as a browser vendor's push service does (RFC 8030),
// verifies each request's VAPID JWT (RFC 8292) against the key the
// subscription was made with, and decrypts the aes128gcm payload
// (RFC 8291) with the subscription's private key, which it made as a
// browser would — so a test sees what the browser's service worker would.
package webpushtest

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/webpush/webpushreceiver"
)

// Push is one push the service accepted.
type Push struct {
	// Endpoint is the subscription's endpoint.
	Endpoint string
	// Plaintext is the decrypted payload.
	Plaintext []byte
	TTL       int
	Topic     string
	// Subscriber is the VAPID JWT's sub claim.
	Subscriber string
}

// Answer is a refusal the service gives instead of accepting a push.
type Answer struct {
	Status     int
	RetryAfter string
	Body       string
}

// subscription is what the service knows of one subscription: the keys
// the browser holds.
type subscription struct {
	serverKey []byte // the application server key it was made with
	keys      *webpushreceiver.Receiver
	gone      bool
}

// Server is the fake push service.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	subs     map[string]*subscription
	pushes   []Push
	requests int
	next     []Answer
	seq      int
}

// NewServer starts a fake push service, closed when the test ends.
func NewServer(t testing.TB) *Server {
	s := &Server{subs: map[string]*subscription{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Subscribe makes a subscription for the application server key
// applicationServerKey (base64url), as pushManager.subscribe does: a new
// P-256 key pair and auth secret, and an endpoint on this server.
func (s *Server) Subscribe(t testing.TB, applicationServerKey string) push.Subscription {
	t.Helper()
	serverKey, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(applicationServerKey, "="))
	if err != nil {
		t.Fatalf("webpushtest: application server key: %v", err)
	}
	keys, err := webpushreceiver.New()
	if err != nil {
		t.Fatalf("webpushtest: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	endpoint := fmt.Sprintf("%s/push/sub%d", s.URL, s.seq)
	s.subs[endpoint] = &subscription{serverKey: serverKey, keys: keys}
	return keys.Subscription(endpoint)
}

// Unsubscribe ends a subscription, as a browser does when the user revokes
// the permission: pushes to it get 410 Gone.
func (s *Server) Unsubscribe(endpoint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub := s.subs[endpoint]; sub != nil {
		sub.gone = true
	}
}

// Refuse has the service give the answers, one per push, to the next
// verified pushes instead of accepting them.
func (s *Server) Refuse(answers ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = append(s.next, answers...)
}

// Pushes are the pushes accepted so far.
func (s *Server) Pushes() []Push {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Push(nil), s.pushes...)
}

// Requests is how many requests the service has received.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// topicPattern is RFC 8030 §5.4's Topic.
var topicPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	endpoint := s.URL + r.URL.Path
	sub := s.subs[endpoint]
	s.mu.Unlock()
	switch {
	case r.Method != http.MethodPost:
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	case sub == nil:
		http.Error(w, "no such subscription", http.StatusNotFound)
		return
	case sub.gone:
		http.Error(w, "subscription expired", http.StatusGone)
		return
	}
	p, status, err := s.read(r, sub, endpoint)
	if err != nil {
		http.Error(w, err.Error(), status)
		return
	}
	s.answer(w, p)
}

// read verifies a push and decrypts it; on failure it says which status
// a push service answers.
func (s *Server) read(r *http.Request, sub *subscription, endpoint string) (Push, int, error) {
	p := Push{Endpoint: endpoint, Topic: r.Header.Get("Topic")}
	ttl, err := strconv.Atoi(r.Header.Get("TTL"))
	if err != nil || ttl < 0 {
		return p, http.StatusBadRequest, fmt.Errorf("TTL header %q is not a number of seconds", r.Header.Get("TTL"))
	}
	p.TTL = ttl
	if p.Topic != "" && !topicPattern.MatchString(p.Topic) {
		return p, http.StatusBadRequest, fmt.Errorf("Topic header %q is not 1 to 32 base64url characters", p.Topic)
	}
	if p.Subscriber, err = webpushreceiver.VerifyVAPID(r.Header.Get("Authorization"), sub.serverKey, s.URL); err != nil {
		return p, http.StatusForbidden, err
	}
	if r.Header.Get("Content-Encoding") != "aes128gcm" {
		return p, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Encoding %q is not aes128gcm", r.Header.Get("Content-Encoding"))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4097))
	if err != nil || len(body) > 4096 {
		return p, http.StatusRequestEntityTooLarge, fmt.Errorf("payload over 4096 bytes")
	}
	if p.Plaintext, err = sub.keys.Decrypt(body); err != nil {
		return p, http.StatusBadRequest, fmt.Errorf("decrypting: %w", err)
	}
	return p, 0, nil
}

// answer accepts p, unless a refusal is queued.
func (s *Server) answer(w http.ResponseWriter, p Push) {
	s.mu.Lock()
	if len(s.next) > 0 {
		a := s.next[0]
		s.next = s.next[1:]
		s.mu.Unlock()
		if a.RetryAfter != "" {
			w.Header().Set("Retry-After", a.RetryAfter)
		}
		http.Error(w, a.Body, a.Status)
		return
	}
	s.pushes = append(s.pushes, p)
	n := len(s.pushes)
	s.mu.Unlock()
	w.Header().Set("Location", fmt.Sprintf("%s/message/%d", s.URL, n))
	w.Header().Set("TTL", strconv.Itoa(p.TTL))
	w.WriteHeader(http.StatusCreated)
}
