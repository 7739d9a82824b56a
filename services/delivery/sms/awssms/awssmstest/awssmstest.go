// Package awssmstest is a fake Amazon End User Messaging SMS endpoint
// (pinpointsmsvoicev2) for tests. It speaks the real wire protocol
// (awsJson1_0: POST / with an X-Amz-Target header naming the operation,
// JSON bodies, errors named by a "__type" field and an X-Amzn-ErrorType
// header), so the real AWS SDK — and so the real awssms provider — runs
// against it unchanged. It serves SendTextMessage only.
//
// Faults come two ways: FailNext queues a fault for the next requests (the
// hook a conformance suite needs), and Faults decides per request by a
// function of the call number, so a test can script an exact sequence and a
// load test can inject a deterministic rate. Two numbers are refused as the
// service would refuse them: InvalidNumber and OptedOutNumber.
//
// The fake checks that requests are SigV4-signed for the service (an
// Authorization header naming an access key and the sms-voice scope) but
// not the signature itself: it tests the provider, not AWS's
// authentication.
package awssmstest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// Numbers the fake refuses, as the service refuses such numbers.
const (
	// InvalidNumber has the shape of an E.164 number, but its country code
	// (999) is not assigned: a ValidationException.
	InvalidNumber = "+99912345678"
	// OptedOutNumber replied STOP: a ConflictException with the reason
	// DESTINATION_PHONE_NUMBER_OPTED_OUT.
	OptedOutNumber = "+34600999000"
)

// Wire names of the one operation served.
const (
	Target      = "PinpointSMSVoiceV2.SendTextMessage"
	ContentType = "application/x-amz-json-1.0"
)

// Received is a message the fake accepted: answered with success, with or
// without a message id.
type Received struct {
	To, Body                                  string
	OriginationIdentity, ConfigurationSetName string
	MessageType                               string
	Context                                   map[string]string
	// AccessKeyID is the key the request was signed with.
	AccessKeyID string
	// MessageID is the id the fake answered with; empty under NoMessageID.
	MessageID string
}

// Server is a fake End User Messaging SMS endpoint. It is safe for
// concurrent use.
type Server struct {
	srv   *httptest.Server
	done  chan struct{} // closed on cleanup, so no handler outlives the test
	calls atomic.Int64

	faultMu sync.Mutex // serializes fault functions, so they may keep state
	faults  func(call int) Fault
	next    []Fault // queued by FailNext, taken before faults is asked

	mu       sync.Mutex
	received []Received
}

// New starts a fake and stops it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(func() {
		// Release handlers held by a Delay or Hold first: httptest's Close
		// waits for every handler to return.
		close(s.done)
		s.srv.Close()
	})
	return s
}

// URL is the endpoint to give the SDK (awssms.Config.Endpoint).
func (s *Server) URL() string { return s.srv.URL }

// Calls is how many requests arrived, whatever became of them.
func (s *Server) Calls() int { return int(s.calls.Load()) }

// Received lists the accepted messages in the order they were accepted.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Received, len(s.received))
	for i, r := range s.received {
		r.Context = maps.Clone(r.Context)
		out[i] = r
	}
	return out
}

// FailNext makes the next n SendTextMessage requests meet f, after any
// faults already queued; FailNext(1, ServerError) is a 5xx for the next
// send. Requests refused before they reach the fault stage (unsigned,
// another operation, an unreadable body) do not use up the queue.
func (s *Server) FailNext(n int, f Fault) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	for range n {
		s.next = append(s.next, f)
	}
}

// Faults sets what each request meets once the FailNext queue is empty;
// call counts every request from 1. Calls to fn are serialized. Nil (the
// default) means no faults.
func (s *Server) Faults(fn func(call int) Fault) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	s.faults = fn
}

// Fault is what one request meets instead of (or before) a normal answer.
// The zero Fault is None.
type Fault struct {
	name       string
	status     int
	code       string
	message    string
	reason     string
	fields     []field
	resource   [2]string // type, id
	retryAfter time.Duration
	bodyOnly   bool
	delay      time.Duration
	hold       <-chan struct{}
	noID       bool
}

type field struct{ Name, Message string }

// Faults the fake can inject.
var (
	None = Fault{}
	// ServerError is an internal failure on AWS's side.
	ServerError = APIError(http.StatusInternalServerError, "InternalServerException", "An internal error occurred. Try again later.")
	// ServiceUnavailable is the endpoint turning requests away for a while.
	ServiceUnavailable = APIError(http.StatusServiceUnavailable, "ServiceUnavailable", "The service is unavailable. Please try again later.")
	// NoMessageID accepts and records the message, as AWS would, but
	// answers success without a message id: the sender cannot tell whether
	// it will go out.
	NoMessageID = Fault{name: "NoMessageID", noID: true}
	// SpendLimitReached is the account's monthly SMS spend limit used up.
	SpendLimitReached = APIError(http.StatusBadRequest, "ServiceQuotaExceededException",
		"You have exceeded your monthly spend limit for text messages.").WithReason("MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT")
	// AccessDenied is an IAM policy that does not allow sending.
	AccessDenied = APIError(http.StatusBadRequest, "AccessDeniedException",
		"User: arn:aws:iam::123456789012:user/herald is not authorized to perform: sms-voice:SendTextMessage")
	// OriginationNotFound is an origination identity the account does not
	// have.
	OriginationNotFound = APIError(http.StatusBadRequest, "ResourceNotFoundException",
		"The requested resource was not found.").WithResource("phone-number", "phone-0123456789abcdef")
	// Unauthorized is AWS rejecting the credentials.
	Unauthorized = APIError(http.StatusBadRequest, "UnrecognizedClientException", "The security token included in the request is invalid.")
)

// APIError is an error answer: status, the exception's name and message —
// for refusals the named faults do not cover. WithReason, WithResource and
// WithField add what the API's exceptions carry besides.
func APIError(status int, code, message string) Fault {
	return Fault{name: code, status: status, code: code, message: message}
}

// WithReason is f with the exception's Reason ("DESTINATION_COUNTRY_BLOCKED").
func (f Fault) WithReason(reason string) Fault {
	f.reason = reason
	f.name = f.code + "(" + reason + ")"
	return f
}

// WithResource is f with the exception's ResourceType and ResourceId.
func (f Fault) WithResource(typ, id string) Fault {
	f.resource = [2]string{typ, id}
	return f
}

// WithField is f with one more of a ValidationException's Fields.
func (f Fault) WithField(name, message string) Fault {
	f.fields = append(f.fields[:len(f.fields):len(f.fields)], field{name, message})
	return f
}

// BodyOnly is f named only by the body's "__type", without the
// X-Amzn-ErrorType header: the SDK must find the exception either way.
func (f Fault) BodyOnly() Fault {
	f.bodyOnly = true
	f.name += "/body-only"
	return f
}

// Throttle is a ThrottlingException, with a Retry-After header in whole
// seconds when retryAfter is positive.
func Throttle(retryAfter time.Duration) Fault {
	f := APIError(http.StatusBadRequest, "ThrottlingException", "Rate exceeded")
	f.name = "Throttle(" + retryAfter.String() + ")"
	f.retryAfter = retryAfter
	return f
}

// Delay holds the answer back for d, then answers normally. A client that
// gives up first leaves nothing behind: the request is abandoned and the
// message not accepted.
func Delay(d time.Duration) Fault {
	return Fault{name: "Delay(" + d.String() + ")", delay: d}
}

// Hold holds the answer until release is closed, then answers normally: a
// send that stays under way for as long as a test needs. A client that
// gives up first leaves nothing behind, as with Delay.
func Hold(release <-chan struct{}) Fault {
	return Fault{name: "Hold", hold: release}
}

func (f Fault) String() string {
	if f.name == "" {
		return "None"
	}
	return f.name
}

// sendTextMessageRequest is the part of SendTextMessage's body the fake
// understands.
type sendTextMessageRequest struct {
	DestinationPhoneNumber *string
	MessageBody            *string
	MessageType            string
	OriginationIdentity    string
	ConfigurationSetName   string
	Context                map[string]string
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	call := int(s.calls.Add(1))
	requestID := "fake-request-" + strconv.Itoa(call)
	w.Header().Set("X-Amzn-RequestId", requestID)

	if r.Method != http.MethodPost || r.URL.Path != "/" || r.Header.Get("X-Amz-Target") != Target {
		writeError(w, APIError(http.StatusBadRequest, "UnknownOperationException", "the fake serves only "+Target+" at POST /"), requestID)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != ContentType {
		writeError(w, APIError(http.StatusBadRequest, "SerializationException", "Content-Type "+ct+" is not "+ContentType), requestID)
		return
	}
	accessKey, ok := signedBy(r.Header.Get("Authorization"))
	if !ok {
		writeError(w, APIError(http.StatusBadRequest, "MissingAuthenticationTokenException", "Missing or malformed SigV4 Authorization header for sms-voice."), requestID)
		return
	}
	// Read to the end: only then does the server watch the connection, and
	// cancel the request's context when a client gives up on a Delay.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req sendTextMessageRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, APIError(http.StatusBadRequest, "SerializationException", "cannot read the request body: "+err.Error()), requestID)
		return
	}

	f := s.fault(call)
	if !s.wait(r, f) {
		return
	}
	if f.status != 0 {
		if f.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((f.retryAfter+time.Second-1)/time.Second)))
		}
		writeError(w, f, requestID)
		return
	}
	if refusal, refused := refuse(req); refused {
		writeError(w, refusal, requestID)
		return
	}

	got := Received{
		To:                   *req.DestinationPhoneNumber,
		Body:                 *req.MessageBody,
		OriginationIdentity:  req.OriginationIdentity,
		ConfigurationSetName: req.ConfigurationSetName,
		MessageType:          req.MessageType,
		Context:              req.Context,
		AccessKeyID:          accessKey,
	}
	if !f.noID {
		got.MessageID = messageID(call)
	}
	s.mu.Lock()
	s.received = append(s.received, got)
	s.mu.Unlock()
	if f.noID {
		writeJSON(w, http.StatusOK, struct{}{})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"MessageId": got.MessageID})
}

// destinationPattern is the API's pattern for DestinationPhoneNumber.
var destinationPattern = regexp.MustCompile(`^\+?[1-9][0-9]{1,18}$`)

// refuse is the service's verdict on a well-formed request: what it
// validates (the documented constraints) and the numbers it will not send
// to.
func refuse(req sendTextMessageRequest) (Fault, bool) {
	invalid := func(reason, name, message string) (Fault, bool) {
		return APIError(http.StatusBadRequest, "ValidationException", "Invalid parameter: "+name+".").
			WithReason(reason).WithField(name, message), true
	}
	switch {
	case req.DestinationPhoneNumber == nil:
		return invalid("MISSING_PARAMETER", "DestinationPhoneNumber", "Member must not be null")
	case !destinationPattern.MatchString(*req.DestinationPhoneNumber):
		return invalid("INVALID_PARAMETER", "DestinationPhoneNumber", `Member must satisfy regular expression pattern: \+?[1-9][0-9]{1,18}`)
	case req.MessageBody == nil || *req.MessageBody == "":
		return invalid("MISSING_PARAMETER", "MessageBody", "Member must have length greater than or equal to 1")
	case utf8.RuneCountInString(*req.MessageBody) > 1600:
		return invalid("MAXIMUM_SIZE_EXCEEDED", "MessageBody", "Member must have length less than or equal to 1600")
	case req.MessageType != "" && req.MessageType != "TRANSACTIONAL" && req.MessageType != "PROMOTIONAL":
		return invalid("INVALID_PARAMETER", "MessageType", "Member must satisfy enum value set: [TRANSACTIONAL, PROMOTIONAL]")
	}
	if name, problem := badContext(req.Context); problem != "" {
		return invalid("INVALID_PARAMETER", name, problem)
	}
	switch *req.DestinationPhoneNumber {
	case InvalidNumber:
		return invalid("INVALID_PARAMETER", "DestinationPhoneNumber", "The destination phone number is not a valid phone number.")
	case OptedOutNumber:
		return APIError(http.StatusBadRequest, "ConflictException", "The destination phone number is opted out.").
			WithReason("DESTINATION_PHONE_NUMBER_OPTED_OUT").WithResource("opted-out-number", OptedOutNumber), true
	}
	return Fault{}, false
}

// badContext checks Context against the API's documented constraints: at
// most 5 entries, keys of 1 to 100 characters without white space, values
// of 1 to 800 characters not starting or ending with it.
func badContext(c map[string]string) (name, problem string) {
	if len(c) > 5 {
		return "Context", "Member must have at most 5 entries"
	}
	for k, v := range c {
		switch {
		case k == "" || utf8.RuneCountInString(k) > 100 || strings.IndexFunc(k, unicode.IsSpace) >= 0:
			return "Context", fmt.Sprintf("key %q must satisfy length 1-100 and pattern \\S+", k)
		case v == "" || utf8.RuneCountInString(v) > 800:
			return "Context." + k, "Member must have length between 1 and 800"
		case !utf8.ValidString(v):
			return "Context." + k, "Member must be valid UTF-8"
		}
		first, _ := utf8.DecodeRuneInString(v)
		last, _ := utf8.DecodeLastRuneInString(v)
		if unicode.IsSpace(first) || unicode.IsSpace(last) {
			return "Context." + k, "Member must not start or end with white space"
		}
	}
	return "", ""
}

// wait holds the answer as f says (Delay, Hold). It reports false when the
// request is to be abandoned: its client gave up, or the test ended.
func (s *Server) wait(r *http.Request, f Fault) bool {
	if f.delay <= 0 && f.hold == nil {
		return true
	}
	var timeout <-chan time.Time
	if f.delay > 0 {
		t := time.NewTimer(f.delay)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
	case <-f.hold:
	case <-r.Context().Done():
		return false
	case <-s.done:
		// Cut the connection rather than answer: an empty 200 would read
		// as a success without a message id.
		panic(http.ErrAbortHandler)
	}
	return true
}

func (s *Server) fault(call int) Fault {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	if len(s.next) > 0 {
		f := s.next[0]
		s.next = s.next[1:]
		return f
	}
	if s.faults == nil {
		return None
	}
	return s.faults(call)
}

// signedBy reads the access key id from a SigV4 Authorization header for
// this service: "AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/sms-voice/aws4_request, …".
func signedBy(h string) (accessKey string, ok bool) {
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 Credential=")
	if !ok {
		return "", false
	}
	scope, _, _ := strings.Cut(rest, ",")
	parts := strings.Split(scope, "/")
	if len(parts) != 5 || parts[0] == "" || parts[3] != "sms-voice" || parts[4] != "aws4_request" {
		return "", false
	}
	return parts[0], true
}

// namespace is the Smithy namespace AWS prefixes to "__type"; the SDK
// strips it.
const namespace = "com.amazonaws.pinpointsmsvoicev2#"

// writeError answers the way the service does: the exception named in the
// body's "__type" and, unless f is BodyOnly, the X-Amzn-ErrorType header,
// which the SDK prefers; its members beside it.
func writeError(w http.ResponseWriter, f Fault, requestID string) {
	body := map[string]any{"__type": namespace + f.code, "Message": f.message}
	if f.code == "InternalServerException" {
		body["RequestId"] = requestID // a member of this exception alone
	}
	if f.reason != "" {
		body["Reason"] = f.reason
	}
	if len(f.fields) > 0 {
		body["Fields"] = f.fields
	}
	if f.resource[0] != "" {
		body["ResourceType"] = f.resource[0]
	}
	if f.resource[1] != "" {
		body["ResourceId"] = f.resource[1]
	}
	if !f.bodyOnly {
		w.Header().Set("X-Amzn-ErrorType", f.code+":http://internal.amazon.com/coral/com.amazonaws.pinpointsmsvoicev2/")
	}
	writeJSON(w, f.status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// messageID imitates the service's UUID-shaped ids; the call number keeps
// ids unique within a server, the random part across servers.
func messageID(call int) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("%08x-%s-%s-%s-%s", call, h[0:4], h[4:8], h[8:12], h[12:24])
}
