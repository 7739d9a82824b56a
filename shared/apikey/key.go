package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrInvalid means a presented string is not of the form of a key.
var ErrInvalid = errors.New("apikey: not an API key")

// Scope is what a key may do.
type Scope string

const (
	// Send: publish events and notifications.
	Send Scope = "send"
	// Read: notification status and lists.
	Read Scope = "read"
	// Admin: every tenant's data, tenants, keys and the DLQ. It implies
	// the other scopes.
	Admin Scope = "admin"
	// Observe: an operator who looks and changes nothing — the console's
	// read-only role. It belongs to no tenant, and the HTTP API refuses
	// it: its routes are for tenants and administrators.
	Observe Scope = "observe"
)

// Key is what is known about a key, without its secret or the secret's
// digest: safe to print, log or answer with.
type Key struct {
	ID string `json:"id"`
	// Tenant is the tenant the key belongs to; empty for an admin key.
	Tenant   string    `json:"tenant,omitempty"`
	Name     string    `json:"name,omitempty"`
	Scopes   []Scope   `json:"scopes"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used,omitzero"`
	Revoked  time.Time `json:"revoked,omitzero"`
}

// Allows reports whether the key holds scope, or admin.
func (k Key) Allows(scope Scope) bool {
	return slices.Contains(k.Scopes, scope) || slices.Contains(k.Scopes, Admin)
}

// Reaches reports whether the key may touch tenant's data: an admin key
// reaches every tenant, a tenant key only its own.
func (k Key) Reaches(tenant string) bool {
	return k.Allows(Admin) || (k.Tenant != "" && k.Tenant == tenant)
}

// ParseScopes reads a comma-separated list of scopes: "send,read".
func ParseScopes(s string) ([]Scope, error) {
	var out []Scope
	for word := range strings.SplitSeq(s, ",") {
		scope := Scope(strings.TrimSpace(word))
		if !slices.Contains([]Scope{Send, Read, Admin}, scope) {
			return nil, fmt.Errorf("%w: unknown scope %q (send, read or admin)", ErrBadSpec, scope)
		}
		out = append(out, scope)
	}
	return out, nil
}

const (
	prefix    = "hk_"
	idLen     = 12 // 60 random bits: ids are public, Create refuses a repeat
	secretLen = 32 // bytes
)

// encoding is base32 in lowercase, without padding: letters and 2–7 only.
var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// encodedSecretLen is encoding.EncodedLen(secretLen): 256 bits in
// characters of 5, the last one carrying 1 bit and 4 unused ones.
const encodedSecretLen = 52

// presented is a key taken apart.
type presented struct {
	id     string
	digest [sha256.Size]byte // of the secret's bytes
}

// Parse checks that s has the form of a key, strictly — the prefix, an id
// and a secret of exactly their lengths and alphabet, the secret in its
// one canonical spelling — and returns its public id.
func Parse(s string) (id string, err error) {
	p, err := parse(s)
	return p.id, err
}

func parse(s string) (presented, error) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != idLen+1+encodedSecretLen || rest[idLen] != '_' {
		return presented{}, ErrInvalid
	}
	id, encoded := rest[:idLen], rest[idLen+1:]
	if !validID(id) {
		return presented{}, ErrInvalid
	}
	var secret [secretLen]byte
	n, err := encoding.Decode(secret[:], []byte(encoded))
	// Re-encoding refuses the spellings that differ only in the unused
	// low bits of the last character, so one secret has one key.
	var canonical [encodedSecretLen]byte
	encoding.Encode(canonical[:], secret[:])
	if err != nil || n != secretLen || string(canonical[:]) != encoded {
		return presented{}, ErrInvalid
	}
	return presented{id: id, digest: sha256.Sum256(secret[:])}, nil
}

// validID reports whether s can be a key's id: idLen characters of the
// encoding's alphabet (which makes it a valid KV key too).
func validID(s string) bool {
	if len(s) != idLen {
		return false
	}
	for _, c := range []byte(s) {
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// generate makes a new key: its plain text and what is kept of it.
func generate() (plain string, p presented) {
	var idBytes [8]byte
	secret := make([]byte, secretLen)
	// crypto/rand.Read never fails (it crashes the program instead).
	_, _ = rand.Read(idBytes[:])
	_, _ = rand.Read(secret)
	id := encoding.EncodeToString(idBytes[:])[:idLen]
	return prefix + id + "_" + encoding.EncodeToString(secret), presented{id: id, digest: sha256.Sum256(secret)}
}
