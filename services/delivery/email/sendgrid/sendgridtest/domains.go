package sendgridtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Domain is an authenticated domain the fake holds.
type Domain struct {
	ID     int64
	Domain string
	// AutomaticSecurity is what the request asked for: SendGrid gives
	// three CNAME records under it, TXT and MX records without.
	AutomaticSecurity bool
	Valid             bool
}

// fakeUser numbers the records' targets, as SendGrid's user id does.
const fakeUser = 1446226

// Domains lists the authenticated domains in the order they were created.
func (s *Server) Domains() []Domain {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Domain, len(s.domains))
	for i, d := range s.domains {
		out[i] = *d
	}
	return out
}

// VerifyDomain makes SendGrid find every record of each authenticated
// domain named domain: the next validation says valid.
func (s *Server) VerifyDomain(domain string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.domains {
		if d.Domain == domain {
			d.Valid = true
		}
	}
}

type record struct {
	Valid bool   `json:"valid"`
	Type  string `json:"type"`
	Host  string `json:"host"`
	Data  string `json:"data"`
}

// records are d's DNS records as SendGrid names them under automated
// security: the return path's CNAME and two DKIM CNAMEs.
func (d *Domain) records() map[string]record {
	wl := fmt.Sprintf("u%d.wl%03d.sendgrid.net", fakeUser, d.ID%1000)
	return map[string]record{
		"mail_cname": {Valid: d.Valid, Type: "cname", Host: fmt.Sprintf("em%d.%s", 1000+d.ID, d.Domain), Data: wl},
		"dkim1":      {Valid: d.Valid, Type: "cname", Host: "s1._domainkey." + d.Domain, Data: "s1.domainkey." + wl},
		"dkim2":      {Valid: d.Valid, Type: "cname", Host: "s2._domainkey." + d.Domain, Data: "s2.domainkey." + wl},
	}
}

func (s *Server) createDomain(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.apiKey {
		writeError(w, http.StatusUnauthorized, badKey)
		return
	}
	var req struct {
		Domain            string `json:"domain"`
		AutomaticSecurity bool   `json:"automatic_security"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, apiError{Message: "Bad Request"})
		return
	}
	if req.Domain == "" || !strings.Contains(req.Domain, ".") || strings.ContainsAny(req.Domain, " @/") {
		field := "domain"
		writeError(w, http.StatusBadRequest, apiError{Message: "invalid domain", Field: &field})
		return
	}
	if !req.AutomaticSecurity {
		writeError(w, http.StatusBadRequest, apiError{Message: "the fake authenticates domains under automatic_security only"})
		return
	}
	s.mu.Lock()
	d := &Domain{ID: int64(len(s.domains) + 1), Domain: req.Domain, AutomaticSecurity: true}
	s.domains = append(s.domains, d)
	answer := map[string]any{"id": d.ID, "user_id": fakeUser, "subdomain": fmt.Sprintf("em%d", 1000+d.ID), "domain": d.Domain,
		"username": "herald-test", "ips": []string{}, "custom_spf": false, "default": false, "legacy": false,
		"automatic_security": true, "valid": d.Valid, "dns": d.records()}
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, answer)
}

func (s *Server) validateDomain(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.apiKey {
		writeError(w, http.StatusUnauthorized, badKey)
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	var d *Domain
	if err == nil && id >= 1 && id <= int64(len(s.domains)) {
		d = s.domains[id-1]
	}
	var answer map[string]any
	if d != nil {
		results := map[string]any{}
		for name, rec := range d.records() {
			var reason any // null when valid, as SendGrid sends it
			if !rec.Valid {
				reason = fmt.Sprintf("Expected CNAME at %q to match %q, but none was found.", rec.Host, rec.Data)
			}
			results[name] = map[string]any{"valid": rec.Valid, "reason": reason}
		}
		answer = map[string]any{"id": d.ID, "valid": d.Valid, "validation_results": results}
	}
	s.mu.Unlock()
	if d == nil {
		writeError(w, http.StatusNotFound, apiError{Message: "authenticated domain not found"})
		return
	}
	writeJSON(w, http.StatusOK, answer)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
