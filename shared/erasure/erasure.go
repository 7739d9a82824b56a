// Package erasure erases one of a tenant's subscribers: what the
// directory keeps of her goes, with every revision its buckets keep
// (recipient.Directory.Erase), and her addresses — every one her kept
// profile revisions name — are redacted where notifications and
// suppressions recorded them:
//
//   - the notification index's rows (history) and the delivery ledger's
//     entries stay, in their state, so counts hold and nothing is sent
//     twice, with a mask ("erased:" and a keyed hash) in place of the
//     address; a ledger entry is rewritten with its earlier revisions
//     dropped, and the rewrite is not an outcome to the ledger's readers;
//   - a suppression of her address keeps holding it back — its key, a
//     digest of the address, is unchanged — but holds a keyed hash in the
//     address's place (suppression.Conceal).
//
// The hashes are keyed by a key derived from the deployment's link secret,
// so the same address always hashes alike within a deployment (an
// operator asking about an address finds its entry) and nobody without
// the secret can test a guess against a mask.
//
// An erasure answers with a Receipt counting what it erased, and records
// it, with who asked, on the AUDIT stream (AuditSubject). It is
// idempotent: run again, it finds nothing and says so. A notification
// still being sent when it runs cannot be redacted under its worker; the
// receipt counts those, the profile is then deleted but its revisions
// kept, and running the erasure again once they settle completes it.
package erasure

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/suppression"
)

// Rows is the notification index as an erasure redacts it (history.Store).
type Rows interface {
	Recipients(ctx context.Context, tenant, address string) ([]string, error)
	Redact(ctx context.Context, tenant, address, mask string) (int64, error)
}

// MinSecret is the shortest secret a key is derived from, as the link
// secret's.
const MinSecret = 32

// Config configures an Eraser.
type Config struct {
	// Secret is the deployment's secret the hashes' key is derived from:
	// the link secret (documents.link_secret_env). Required, at least
	// MinSecret bytes.
	Secret []byte
	// History is the notification index. Nil: the deployment has none, and
	// the ledger's entries to an address are found by reading the tenant's.
	History Rows
}

// Eraser erases subscribers.
type Eraser struct {
	js           jetstream.JetStream
	dir          *recipient.Directory
	ledger       *ledger.Ledger
	suppressions *suppression.Store
	history      Rows
	key          []byte
}

// ErrNoSecret: the deployment has no secret to key the hashes with.
var ErrNoSecret = errors.New("erasure: a link secret of at least 32 bytes is required (documents.link_secret_env) to key the hashes erased addresses leave")

// Open binds to the buckets, which streams.Apply creates.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Eraser, error) {
	if len(cfg.Secret) < MinSecret {
		return nil, ErrNoSecret
	}
	e := &Eraser{js: js, history: cfg.History, key: derive(cfg.Secret)}
	var errs [3]error
	e.dir, errs[0] = recipient.Open(ctx, js)
	e.ledger, errs[1] = ledger.Open(ctx, js)
	e.suppressions, errs[2] = suppression.Open(ctx, js)
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("erasure: %w", err)
	}
	return e, nil
}

// derive is the hashes' key: the secret's own for this use, so that it
// signs nothing a link does.
func derive(secret []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("herald erased addresses v1"))
	return mac.Sum(nil)
}

// Hash is address's keyed hash, as a concealed suppression keeps it: hex
// HMAC-SHA256 of the address as suppressions compare it.
func (e *Eraser) Hash(address string) string {
	mac := hmac.New(sha256.New, e.key)
	mac.Write([]byte(suppression.Normalize(address)))
	return hex.EncodeToString(mac.Sum(nil))
}

// Hasher is Hash under the key derived from secret, for code that conceals
// an address outside an erasure — an unsubscribe link of a subscriber
// already erased — and must leave the hash an erasure would.
func Hasher(secret []byte) func(address string) string {
	return (&Eraser{key: derive(secret)}).Hash
}

// Mask is what stands in address's place in a notification's record:
// "erased:" and the first 16 hex digits of its Hash — distinct per
// address, so an erased subscriber's notifications still list together.
func (e *Eraser) Mask(address string) string { return "erased:" + e.Hash(address)[:16] }

// masker replaces each of addresses in a text, without case, by its Mask.
func (e *Eraser) masker(addresses []string) func(string) string {
	type rule struct {
		re   *regexp.Regexp
		mask string
	}
	rules := make([]rule, len(addresses))
	for i, a := range addresses {
		rules[i] = rule{regexp.MustCompile(`(?i)` + regexp.QuoteMeta(a)), e.Mask(a)}
	}
	return func(text string) string {
		for _, r := range rules {
			text = r.re.ReplaceAllLiteralString(text, r.mask)
		}
		return text
	}
}
