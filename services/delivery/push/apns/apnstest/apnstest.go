// Package apnstest is a fake APNs for tests: an HTTP/2 TLS server that
// takes pushes as APNs's provider API does — POST /3/device/<token> —
// verifies each request's provider token (an ES256 JWT) against the .p8
// key's public half, checks the apns-* headers, records the alert it
// accepts, and answers a chosen reason for a chosen device token.
package apnstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// maxPayload is APNs's limit for an alert's payload, in bytes.
const maxPayload = 4096

// Account is what the fake knows of the Apple developer account: the
// key id and team id a provider token must name, the public half of the
// .p8 key that must have signed it, and the app's bundle id.
type Account struct {
	KeyID  string
	TeamID string
	Key    *ecdsa.PublicKey
	Topic  string
}

// Push is one push the fake accepted.
type Push struct {
	Token      string
	ApnsID     string
	CollapseID string
	Expiration int64
	Priority   string
	Title      string
	Body       string
	// URL is the payload's "url" custom key.
	URL string
	// ID is the payload's "id" custom key.
	ID string
}

// Answer is a refusal the fake gives a device token instead of accepting.
type Answer struct {
	Status int
	Reason string
	// Timestamp is, for a 410, when the token stopped being valid.
	Timestamp time.Time
}

// Server is the fake APNs.
type Server struct {
	*httptest.Server
	account  Account
	mu       sync.Mutex
	pushes   []Push
	refusals map[string]Answer
	requests int
}

// NewServer starts a fake APNs for account over HTTP/2 and TLS, closed
// when the test ends. Its certificate is trusted by Client's transport.
func NewServer(t testing.TB, account Account) *Server {
	s := &Server{account: account, refusals: map[string]Answer{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// NewKey makes a .p8 key as Apple's developer site gives one: a P-256
// private key, PKCS#8, PEM. It returns the PEM and the key.
func NewKey(t testing.TB) (string, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("apnstest: generating a key: %v", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("apnstest: encoding a key: %v", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), key
}

// Refuse makes the fake answer a for every push to token.
func (s *Server) Refuse(token string, a Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refusals[token] = a
}

// Pushes are the pushes the fake accepted, in order.
func (s *Server) Pushes() []Push {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Push(nil), s.pushes...)
}

// Requests is how many requests reached the fake, refused or not.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

var (
	pathPattern = regexp.MustCompile(`^/3/device/([0-9a-fA-F]+)$`)
	uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	if r.ProtoMajor != 2 {
		http.Error(w, "APNs speaks HTTP/2 only", http.StatusHTTPVersionNotSupported)
		return
	}
	if r.Method != http.MethodPost {
		refuse(w, Answer{Status: http.StatusMethodNotAllowed, Reason: "MethodNotAllowed"})
		return
	}
	m := pathPattern.FindStringSubmatch(r.URL.Path)
	if m == nil {
		refuse(w, Answer{Status: http.StatusNotFound, Reason: "BadPath"})
		return
	}
	if reason := s.checkProviderToken(r.Header.Get("Authorization")); reason != "" {
		refuse(w, Answer{Status: http.StatusForbidden, Reason: reason})
		return
	}
	p, answer := s.read(r, m[1])
	if answer.Status == 0 {
		answer = s.answerFor(p)
	}
	if answer.Status != http.StatusOK {
		refuse(w, answer)
		return
	}
	w.Header().Set("apns-id", p.ApnsID)
	w.WriteHeader(http.StatusOK)
}

// answerFor records p, unless its token is to be refused.
func (s *Server) answerFor(p Push) Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.refusals[p.Token]; ok {
		return a
	}
	if p.ApnsID == "" {
		p.ApnsID = fmt.Sprintf("00000000-0000-4000-8000-%012d", len(s.pushes)+1)
	}
	s.pushes = append(s.pushes, p)
	return Answer{Status: http.StatusOK}
}

// read checks the request's headers and payload as APNs does, and reads
// the push from them; a non-zero Answer refuses it.
func (s *Server) read(r *http.Request, token string) (Push, Answer) {
	p := Push{Token: token, ApnsID: r.Header.Get("apns-id"), CollapseID: r.Header.Get("apns-collapse-id"),
		Priority: r.Header.Get("apns-priority")}
	bad := func(reason string) (Push, Answer) { return p, Answer{Status: http.StatusBadRequest, Reason: reason} }
	switch topic := r.Header.Get("apns-topic"); {
	case topic == "":
		return bad("MissingTopic")
	case topic != s.account.Topic:
		return bad("DeviceTokenNotForTopic")
	}
	if r.Header.Get("apns-push-type") != "alert" {
		return bad("InvalidPushType")
	}
	if p.ApnsID != "" && !uuidPattern.MatchString(p.ApnsID) {
		return bad("BadMessageId")
	}
	if len(p.CollapseID) > 64 {
		return bad("BadCollapseId")
	}
	if p.Priority != "" && p.Priority != "5" && p.Priority != "10" {
		return bad("BadPriority")
	}
	if exp := r.Header.Get("apns-expiration"); exp != "" {
		var err error
		if p.Expiration, err = strconv.ParseInt(exp, 10, 64); err != nil {
			return bad("BadExpirationDate")
		}
	}
	return s.readPayload(r, p)
}

// payload is the part of an alert's payload the fake reads.
type payload struct {
	Aps struct {
		Alert struct {
			Title string `json:"title"`
			Body  string `json:"body"`
		} `json:"alert"`
	} `json:"aps"`
	URL string `json:"url"`
	ID  string `json:"id"`
}

func (s *Server) readPayload(r *http.Request, p Push) (Push, Answer) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
	switch {
	case err != nil || len(raw) == 0:
		return p, Answer{Status: http.StatusBadRequest, Reason: "PayloadEmpty"}
	case len(raw) > maxPayload:
		return p, Answer{Status: http.StatusRequestEntityTooLarge, Reason: "PayloadTooLarge"}
	}
	var body payload
	if err := json.Unmarshal(raw, &body); err != nil {
		return p, Answer{Status: http.StatusBadRequest, Reason: "BadPayload"}
	}
	p.Title, p.Body, p.URL, p.ID = body.Aps.Alert.Title, body.Aps.Alert.Body, body.URL, body.ID
	return p, Answer{}
}

// refuse answers as APNs does: the status and a JSON body with the
// reason, and for a 410 the time the token stopped being valid.
func refuse(w http.ResponseWriter, a Answer) {
	body := map[string]any{"reason": a.Reason}
	if a.Status == http.StatusGone {
		ts := a.Timestamp
		if ts.IsZero() {
			ts = time.Now()
		}
		body["timestamp"] = ts.UnixMilli()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.Status)
	_ = json.NewEncoder(w).Encode(body)
}
