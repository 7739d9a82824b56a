package vault

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknownKey means a record was sealed under a key the keyring does not
// hold: a previous key dropped too early, or the wrong master key.
var ErrUnknownKey = errors.New("vault: sealed under a key this keyring does not hold")

// ErrDecrypt means a record does not open under the key it names: it was
// altered, or copied from another tenant or provider.
var ErrDecrypt = errors.New("vault: does not decrypt")

// Keyring is the current key, which seals, and the previous keys, which
// still open what was sealed before a rotation.
type Keyring struct {
	current Key
	keys    map[string]Key
}

// NewKeyring makes a keyring. A previous key equal to the current one, or
// given twice, is held once.
func NewKeyring(current Key, previous ...Key) (*Keyring, error) {
	r := &Keyring{current: current, keys: map[string]Key{}}
	for i, k := range append([]Key{current}, previous...) {
		if k.aead == nil {
			return nil, fmt.Errorf("vault: key %d of the keyring is empty (make keys with ParseKey, LoadKey or GenerateKeyFile)", i)
		}
		r.keys[k.id] = k
	}
	return r, nil
}

// WithCurrent is a keyring where next seals and every key of r still
// opens: what a rotation to next needs.
func (r *Keyring) WithCurrent(next Key) (*Keyring, error) {
	var previous []Key
	for _, k := range r.keys {
		previous = append(previous, k)
	}
	return NewKeyring(next, previous...)
}

// Current is the key that seals.
func (r *Keyring) Current() Key { return r.current }

// IDs are the ids of every key held, sorted.
func (r *Keyring) IDs() []string {
	ids := make([]string, 0, len(r.keys))
	for id := range r.keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Seal encrypts plaintext under the current key with AES-256-GCM and a
// random 12-byte nonce, bound to aad: Open succeeds only with the same aad.
// It returns the key's id, to be stored with the result (nonce, then
// ciphertext and tag).
func (r *Keyring) Seal(plaintext, aad []byte) (keyID string, sealed []byte) {
	aead := r.current.aead
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails: it crashes the program instead
	return r.current.id, aead.Seal(nonce, nonce, plaintext, aad)
}

// Open decrypts what Seal returned under the key named keyID.
func (r *Keyring) Open(keyID string, sealed, aad []byte) ([]byte, error) {
	k, ok := r.keys[keyID]
	if !ok {
		return nil, fmt.Errorf("%w: key %s (held: %s)", ErrUnknownKey, keyID, strings.Join(r.IDs(), ", "))
	}
	n := k.aead.NonceSize()
	if len(sealed) < n+k.aead.Overhead() {
		return nil, fmt.Errorf("%w under key %s: %d bytes are too few to be sealed", ErrDecrypt, keyID, len(sealed))
	}
	plaintext, err := k.aead.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, fmt.Errorf("%w under key %s: altered, or sealed for another tenant or provider", ErrDecrypt, keyID)
	}
	return plaintext, nil
}
