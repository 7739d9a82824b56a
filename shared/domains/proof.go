package domains

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"
)

// Shared is a Registrar of a provider account several tenants share, at a
// provider that keeps one registration of a domain for the whole account:
// SES, whose email identity answers whoever asks as it answered the tenant
// that made it. Its word that a domain is verified proves only that
// somebody on the account published the records, so it proves nothing to
// the tenant asking. Register and Check therefore ask Herald's own proof
// first, made for that tenant's entry: a TXT record at _herald.<domain>
// holding the entry's token, which Herald looks up itself. Until Herald
// finds it the provider is not asked at all, and every such domain reads
// the same — pending, that one record to publish — whether it is new to
// the provider or another tenant's, verified or not: registering a domain
// tells a tenant nothing of anybody else's.
type Shared struct {
	Registrar
	// Resolver looks the proof up. Defaults to net.DefaultResolver.
	Resolver TXTResolver
}

// TXTResolver looks up TXT records: *net.Resolver is one.
type TXTResolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// proofTimeout bounds one lookup of a proof.
const proofTimeout = 5 * time.Second

// proofPrefix starts the value of a proof record.
const proofPrefix = "herald-verification="

// newProof is a fresh token for an entry: nothing but the entry knows it.
func newProof() string { return strings.ToLower(rand.Text()) }

// ProofRecord is the record that proves the tenant's domain to Herald.
func ProofRecord(e Entry) Record {
	return Record{Type: "TXT", Name: "_herald." + e.Domain, Value: proofPrefix + e.Proof}
}

// state is where e stands: pending on Herald's proof until it is found,
// then the provider's word — RegisterDomain's, which makes the domain at
// the provider or reads the registration it has — after the proof record.
func (sh Shared) state(ctx context.Context, e Entry) (State, error) {
	found, detail := sh.proven(ctx, e)
	proof := ProofRecord(e)
	if !found {
		return State{Records: []Record{proof}, Status: Pending, Detail: detail}, nil
	}
	st, err := sh.RegisterDomain(ctx, e.Domain)
	if err != nil {
		return State{}, err
	}
	st.Records = append([]Record{proof}, st.Records...)
	return st, nil
}

// proven reports whether the entry's proof record is published; if not,
// what the tenant should do, in words that depend on nothing but its own
// entry and DNS.
func (sh Shared) proven(ctx context.Context, e Entry) (bool, string) {
	r := sh.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, proofTimeout)
	defer cancel()
	rec := ProofRecord(e)
	values, err := r.LookupTXT(ctx, rec.Name)
	var dnsErr *net.DNSError
	switch {
	case err == nil && slices.Contains(values, rec.Value):
		return true, ""
	case err == nil, errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return false, fmt.Sprintf("Herald has not found the TXT record %s yet: publish it, then check again; "+
			"the provider's records follow once Herald finds it", rec.Name)
	}
	// The resolver's words may name Herald's own DNS servers: not the tenant's
	// to read.
	return false, fmt.Sprintf("Herald could not look up the TXT record %s for now: check again later", rec.Name)
}
