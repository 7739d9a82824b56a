package sestest

import (
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// identitiesPath is where CreateEmailIdentity posts, and below which
// GetEmailIdentity reads one: /v2/email/identities/{EmailIdentity}.
const identitiesPath = "/v2/email/identities"

// identity is a domain registered with Easy DKIM.
type identity struct {
	tokens   []string
	verified bool
	// dkim is DkimAttributes.Status: PENDING until a test says otherwise.
	dkim    string
	created time.Time
}

// VerifyDomain makes SES find domain's DKIM records: its DKIM status is
// SUCCESS, and it is verified for sending. An unregistered domain is left
// alone.
func (s *Server) VerifyDomain(domain string) {
	s.setDomain(domain, true, "SUCCESS")
}

// FailDomain makes SES give up looking for domain's DKIM records: its
// DKIM status is FAILED (or status, such as TEMPORARY_FAILURE, when
// given), and it is not verified.
func (s *Server) FailDomain(domain string, status ...string) {
	dkim := "FAILED"
	if len(status) > 0 {
		dkim = status[0]
	}
	s.setDomain(domain, false, dkim)
}

func (s *Server) setDomain(domain string, verified bool, dkim string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.identities[domain]; ok {
		id.verified, id.dkim = verified, dkim
	}
}

// DKIMTokens are the tokens SES gave domain, or none if it is not
// registered.
func (s *Server) DKIMTokens(domain string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.identities[domain]; ok {
		return slices.Clone(id.tokens)
	}
	return nil
}

// serveIdentity serves CreateEmailIdentity and GetEmailIdentity, after the
// checks and faults every request meets.
func (s *Server) serveIdentity(w http.ResponseWriter, r *http.Request, call int) {
	if !signed(r.Header.Get("Authorization")) {
		writeError(w, http.StatusForbidden, "UnrecognizedClientException", "Missing or malformed SigV4 Authorization header.")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
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
		writeError(w, f.status, f.code, f.message)
		return
	}
	name, err := url.PathUnescape(strings.TrimPrefix(strings.TrimPrefix(r.URL.EscapedPath(), identitiesPath), "/"))
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, "BadRequestException", "cannot read the identity in the path")
	case r.Method == http.MethodPost && name == "":
		s.createIdentity(w, body)
	case r.Method == http.MethodGet && name != "" && !strings.Contains(name, "/"):
		s.getIdentity(w, name)
	default:
		writeError(w, http.StatusNotFound, "UnknownOperationException", "the fake serves only CreateEmailIdentity and GetEmailIdentity of the identity operations")
	}
}

func (s *Server) createIdentity(w http.ResponseWriter, body []byte) {
	var req struct {
		EmailIdentity         string
		DkimSigningAttributes *json.RawMessage
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "SerializationException", "cannot read the request body: "+err.Error())
		return
	}
	switch {
	case req.EmailIdentity == "":
		writeError(w, http.StatusBadRequest, "BadRequestException", "1 validation error detected: Value null at 'emailIdentity' failed to satisfy constraint: Member must not be null")
		return
	case req.DkimSigningAttributes != nil:
		writeError(w, http.StatusBadRequest, "BadRequestException", "the fake registers domains with Easy DKIM only")
		return
	case strings.Contains(req.EmailIdentity, "@") || !strings.Contains(req.EmailIdentity, ".") || strings.ContainsAny(req.EmailIdentity, " /"):
		writeError(w, http.StatusBadRequest, "BadRequestException", "Invalid domain name "+req.EmailIdentity+".")
		return
	}
	s.mu.Lock()
	if _, ok := s.identities[req.EmailIdentity]; ok {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "AlreadyExistsException", "Email identity "+req.EmailIdentity+" already exists.")
		return
	}
	if s.identities == nil {
		s.identities = map[string]*identity{}
	}
	id := &identity{tokens: []string{token(), token(), token()}, dkim: "PENDING", created: time.Now()}
	s.identities[req.EmailIdentity] = id
	answer := map[string]any{"IdentityType": "DOMAIN", "VerifiedForSendingStatus": id.verified, "DkimAttributes": id.dkimAttributes()}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, answer)
}

func (s *Server) getIdentity(w http.ResponseWriter, name string) {
	s.mu.Lock()
	id, ok := s.identities[name]
	var answer map[string]any
	if ok {
		verification := map[bool]string{true: "SUCCESS", false: id.dkim}[id.verified]
		answer = map[string]any{"IdentityType": "DOMAIN", "FeedbackForwardingStatus": true,
			"VerifiedForSendingStatus": id.verified, "DkimAttributes": id.dkimAttributes(),
			"Policies": map[string]string{}, "Tags": []any{}, "VerificationStatus": verification}
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "NotFoundException", "Email identity "+name+" does not exist.")
		return
	}
	writeJSON(w, http.StatusOK, answer)
}

// dkimAttributes is the identity's DkimAttributes as SES sends them; the
// timestamp in epoch seconds, as restJson1 sends timestamps.
func (id *identity) dkimAttributes() map[string]any {
	return map[string]any{"SigningEnabled": true, "Status": id.dkim, "Tokens": id.tokens,
		"SigningAttributesOrigin": "AWS_SES", "CurrentSigningKeyLength": "RSA_2048_BIT", "NextSigningKeyLength": "RSA_2048_BIT",
		"LastKeyGenerationTimestamp": id.created.Unix()}
}

// token imitates an Easy DKIM token: 32 lowercase letters and digits.
func token() string {
	return strings.ToLower(rand.Text()[:26]) + strings.ToLower(rand.Text()[:6])
}
