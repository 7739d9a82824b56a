package sendgrid

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sendgrid/rest"
	sg "github.com/sendgrid/sendgrid-go"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/shared/domains"
	"github.com/heraldhq/herald/shared/provider"
)

var _ email.DomainRegistrar = (*Provider)(nil)

// domainsPath is SendGrid's Domain Authentication API (once "whitelabel").
const domainsPath = "/v3/whitelabel/domains"

// dnsRecord is one record of an authenticated domain, as SendGrid gives it.
type dnsRecord struct {
	Valid bool   `json:"valid"`
	Type  string `json:"type"`
	Host  string `json:"host"`
	Data  string `json:"data"`
}

// authenticatedDomain is the part of SendGrid's answer Herald reads.
type authenticatedDomain struct {
	ID    int64 `json:"id"`
	Valid bool  `json:"valid"`
	DNS   struct {
		MailCNAME dnsRecord `json:"mail_cname"`
		DKIM1     dnsRecord `json:"dkim1"`
		DKIM2     dnsRecord `json:"dkim2"`
	} `json:"dns"`
}

// RegisterDomain authenticates domain with SendGrid under automated
// security: three CNAME records (the return path and two DKIM keys), which
// SendGrid rotates itself. The state's ProviderRef is SendGrid's id for
// it, which DomainStatus needs.
func (p *Provider) RegisterDomain(ctx context.Context, domain string) (domains.State, error) {
	body, err := json.Marshal(map[string]any{"domain": domain, "automatic_security": true})
	if err != nil {
		return domains.State{}, err
	}
	var d authenticatedDomain
	if _, err := p.call(ctx, domainsPath, body, &d); err != nil {
		return domains.State{}, err
	}
	st := domains.State{ProviderRef: strconv.FormatInt(d.ID, 10), Status: domains.Pending,
		Detail: "SendGrid has not validated the records yet"}
	for _, r := range []dnsRecord{d.DNS.MailCNAME, d.DNS.DKIM1, d.DNS.DKIM2} {
		if r.Host != "" {
			st.Records = append(st.Records, domains.Record{Type: strings.ToUpper(r.Type), Name: r.Host, Value: r.Data})
		}
	}
	if d.Valid {
		st.Status, st.Detail = domains.Verified, ""
	}
	return st, nil
}

// validation is SendGrid's answer to a validation, the reason of each
// record it found wanting.
type validation struct {
	Valid   bool `json:"valid"`
	Results map[string]struct {
		Valid  bool    `json:"valid"`
		Reason *string `json:"reason"`
	} `json:"validation_results"`
}

// DomainStatus asks SendGrid to validate the domain's records now (ref is
// its id): verified once they are all in place, else pending with
// SendGrid's reasons — SendGrid never gives up on a domain, it is asked
// again.
func (p *Provider) DomainStatus(ctx context.Context, domain, ref string) (domains.State, error) {
	if _, err := strconv.ParseInt(ref, 10, 64); err != nil {
		return domains.State{}, provider.Permanentf("%s: SendGrid's id %q for it is not a number; add the domain again", domain, ref)
	}
	var v validation
	if status, err := p.call(ctx, domainsPath+"/"+url.PathEscape(ref)+"/validate", nil, &v); err != nil {
		if status == http.StatusNotFound {
			return domains.State{Status: domains.Failed,
				Detail: fmt.Sprintf("SendGrid has no authenticated domain %s (id %s): it was deleted there; add the domain again", domain, ref)}, nil
		}
		return domains.State{}, err
	}
	if v.Valid {
		return domains.State{Status: domains.Verified}, nil
	}
	var reasons []string
	for _, name := range slices.Sorted(maps.Keys(v.Results)) {
		if r := v.Results[name]; !r.Valid && r.Reason != nil && *r.Reason != "" {
			reasons = append(reasons, name+": "+*r.Reason)
		}
	}
	detail := "SendGrid has not validated the records yet"
	if len(reasons) > 0 {
		detail = strings.Join(reasons, "; ")
	}
	return domains.State{Status: domains.Pending, Detail: detail}, nil
}

// call posts body to path and reads SendGrid's answer into out. A refusal
// is an error in SendGrid's words, the key never among them, with the
// status it came with (0 without an answer).
func (p *Provider) call(ctx context.Context, path string, body []byte, out any) (int, error) {
	req := sg.GetRequest(p.key, path, p.endpoint)
	req.Method = rest.Post
	req.Body = body
	resp, err := p.client.SendWithContext(ctx, req)
	if resp == nil {
		if err == nil {
			err = errors.New("no response")
		}
		return 0, provider.NetworkError(err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		words := strings.ReplaceAll(providerWords(resp.Body), p.key, "[redacted]")
		return resp.StatusCode, provider.HTTPError(resp.StatusCode, http.Header(resp.Headers), words)
	}
	if err == nil {
		err = json.Unmarshal([]byte(resp.Body), out)
	}
	if err != nil {
		return resp.StatusCode, fmt.Errorf("reading SendGrid's answer: %w", err)
	}
	return resp.StatusCode, nil
}
