// Package fcmtest is a fake Firebase Cloud Messaging for tests: an HTTP
// server that is both Google's OAuth token endpoint — it issues an access
// token for a JWT assertion signed with the key of the service account it
// made — and FCM's HTTP v1 send endpoint, which takes only the tokens it
// issued, checks each message's shape, records it, and answers with FCM's
// own error format when a test asks it to refuse a device.
package fcmtest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Project is the Firebase project of the fake's service account.
const Project = "herald-test"

// Message is one message FCM accepted, as it was sent.
type Message struct {
	Name         string            `json:"-"`
	Token        string            `json:"token"`
	Notification *Notification     `json:"notification"`
	Data         map[string]string `json:"data"`
	Android      *Android          `json:"android"`
	APNS         *APNS             `json:"apns"`
	Webpush      *Webpush          `json:"webpush"`
}

// Notification is a message's notification block.
type Notification struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

// Android is a message's android block.
type Android struct {
	CollapseKey string `json:"collapse_key"`
	TTL         string `json:"ttl"`
}

// APNS is a message's apns block.
type APNS struct {
	Headers map[string]string `json:"headers"`
	Payload json.RawMessage   `json:"payload"`
}

// Webpush is a message's webpush block.
type Webpush struct {
	Headers    map[string]string `json:"headers"`
	FCMOptions *struct {
		Link string `json:"link"`
	} `json:"fcm_options"`
}

// refusal is an FCM error the fake answers for one device token.
type refusal struct {
	code       string
	retryAfter time.Duration
}

// Server is the fake FCM.
type Server struct {
	*httptest.Server
	key      *rsa.PrivateKey
	mu       sync.Mutex
	tokens   map[string]bool
	refusals map[string]refusal
	messages []Message
}

// New starts a fake FCM, closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("fcmtest: generating the service account's key: %v", err)
	}
	s := &Server{key: key, tokens: map[string]bool{}, refusals: map[string]refusal{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /v1/projects/{project}/messages:send", s.send)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Endpoint is the API root to give the provider in place of FCM's.
func (s *Server) Endpoint() string { return s.URL + "/v1" }

// ServiceAccountJSON is a key file for the fake's service account, whose
// token_uri is the fake's token endpoint.
func (s *Server) ServiceAccountJSON() []byte {
	return s.serviceAccount(s.key)
}

// StrangerJSON is a key file for the same service account with a key the
// fake does not know: its assertions are refused.
func (s *Server) StrangerJSON(t testing.TB) []byte {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("fcmtest: generating a key: %v", err)
	}
	return s.serviceAccount(key)
}

func (s *Server) serviceAccount(key *rsa.PrivateKey) []byte {
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	out, _ := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     Project,
		"private_key_id": "fcmtest-key",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   s.clientEmail(),
		"client_id":      "1",
		"token_uri":      s.URL + "/token",
	})
	return out
}

func (s *Server) clientEmail() string { return "herald@" + Project + ".iam.gserviceaccount.com" }

// Refuse makes FCM answer messages to the device token with an FcmError
// code (UNREGISTERED, QUOTA_EXCEEDED, …) and, when retryAfter is not zero,
// a Retry-After.
func (s *Server) Refuse(token, code string, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refusals[token] = refusal{code: code, retryAfter: retryAfter}
}

// RevokeTokens makes every access token issued so far wrong: a request
// bearing one is refused as unauthenticated.
func (s *Server) RevokeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = map[string]bool{}
}

// Messages are the messages FCM accepted, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// token is Google's OAuth token endpoint for the JWT bearer grant
// (RFC 7523): the assertion must be signed by the service account's key,
// issued by it and meant for this endpoint.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if r.FormValue("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		oauthError(w, "unsupported_grant_type")
		return
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(r.FormValue("assertion"), claims, func(*jwt.Token) (any, error) { return &s.key.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(s.clientEmail()), jwt.WithAudience(s.URL+"/token"), jwt.WithExpirationRequired())
	if err != nil {
		oauthError(w, "invalid_grant")
		return
	}
	access := rand.Text()
	s.mu.Lock()
	s.tokens[access] = true
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3600})
}

func oauthError(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
}

// send is FCM's projects.messages.send.
func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	known := s.tokens[bearer]
	s.mu.Unlock()
	if !known {
		apiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "", "Request had invalid authentication credentials.", 0)
		return
	}
	if r.PathValue("project") != Project {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "", "Requested entity was not found.", 0)
		return
	}
	msg, problem := readMessage(r)
	if problem != "" {
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", problem, 0)
		return
	}
	s.mu.Lock()
	refused, isRefused := s.refusals[msg.Token]
	if !isRefused {
		msg.Name = fmt.Sprintf("projects/%s/messages/0:%d", Project, len(s.messages)+1)
		s.messages = append(s.messages, msg)
	}
	s.mu.Unlock()
	if isRefused {
		status, rpc := statusOf(refused.code)
		apiError(w, status, rpc, refused.code, "refused by fcmtest", refused.retryAfter)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"name": msg.Name})
}

// readMessage reads and checks a send request's message, as FCM does: an
// unknown field is refused, and a message needs a token here.
func readMessage(r *http.Request) (Message, string) {
	var req struct {
		ValidateOnly bool    `json:"validate_only"`
		Message      Message `json:"message"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Message{}, "Invalid JSON payload received. " + err.Error()
	}
	msg := req.Message
	switch {
	case msg.Token == "":
		return msg, "The message has no registration token."
	case msg.Notification == nil || msg.Notification.Title == "":
		return msg, "The message has no notification title."
	}
	if msg.Android != nil && msg.Android.TTL != "" && !strings.HasSuffix(msg.Android.TTL, "s") {
		return msg, "Invalid value at 'message.android.ttl'."
	}
	return msg, ""
}

// statusOf is the HTTP status and google.rpc code FCM answers an FcmError
// code with.
func statusOf(code string) (int, string) {
	switch code {
	case "UNREGISTERED":
		return http.StatusNotFound, "NOT_FOUND"
	case "SENDER_ID_MISMATCH":
		return http.StatusForbidden, "PERMISSION_DENIED"
	case "THIRD_PARTY_AUTH_ERROR":
		return http.StatusUnauthorized, "UNAUTHENTICATED"
	case "QUOTA_EXCEEDED":
		return http.StatusTooManyRequests, "RESOURCE_EXHAUSTED"
	case "UNAVAILABLE":
		return http.StatusServiceUnavailable, "UNAVAILABLE"
	case "INTERNAL":
		return http.StatusInternalServerError, "INTERNAL"
	}
	return http.StatusBadRequest, "INVALID_ARGUMENT"
}

// apiError answers as Google APIs do: a google.rpc.Status, with FCM's
// FcmError detail when there is an FCM code.
func apiError(w http.ResponseWriter, status int, rpc, fcmCode, message string, retryAfter time.Duration) {
	details := []map[string]string{}
	if fcmCode != "" {
		details = append(details, map[string]string{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": fcmCode})
	}
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": status, "message": message, "status": rpc, "details": details,
	}})
}
