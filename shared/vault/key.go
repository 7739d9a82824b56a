package vault

import (
	"bytes"
	"cmp"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"regexp"
	"strings"
)

// KeySize is the size of a master key: AES-256.
const KeySize = 32

// Config says where the master key is. Its yaml section is `vault`.
type Config struct {
	// MasterKeyEnv names the environment variable holding the master key:
	// base64 of 32 random bytes (openssl rand -base64 32). Defaults to
	// HERALD_MASTER_KEY.
	MasterKeyEnv string `yaml:"master_key_env"`
	// MasterKeyFile is a file holding the master key, as base64 text (what
	// GenerateKeyFile writes) or as exactly 32 raw bytes; when set, it is
	// used instead of MasterKeyEnv. Defaults to none.
	MasterKeyFile string `yaml:"master_key_file"`
	// PreviousKeyFiles hold keys that still decrypt but no longer encrypt,
	// in the same formats: during a rotation, the key being retired (see
	// the package doc). Defaults to none.
	PreviousKeyFiles []string `yaml:"previous_key_files"`
}

// WithDefaults fills every unset field.
func (c Config) WithDefaults() Config {
	c.MasterKeyEnv = cmp.Or(c.MasterKeyEnv, "HERALD_MASTER_KEY")
	return c
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks the settings without reading the key: LoadKey reads it.
func (c Config) Validate() error {
	var problems []error
	if !envName.MatchString(c.MasterKeyEnv) {
		problems = append(problems, fmt.Errorf("vault.master_key_env: %q is not an environment variable name", c.MasterKeyEnv))
	}
	if c.MasterKeyFile != "" && strings.TrimSpace(c.MasterKeyFile) != c.MasterKeyFile {
		problems = append(problems, fmt.Errorf("vault.master_key_file: %q has spaces around it", c.MasterKeyFile))
	}
	for i, f := range c.PreviousKeyFiles {
		if strings.TrimSpace(f) == "" {
			problems = append(problems, fmt.Errorf("vault.previous_key_files[%d]: is empty", i))
		}
	}
	return errors.Join(problems...)
}

// ErrNoKey means no master key is configured: the environment variable is
// unset and no file is named.
var ErrNoKey = errors.New("vault: no master key")

// Key is one master key. It never prints its bytes: fmt, slog and JSON show
// its id only.
type Key struct {
	id   string
	aead cipher.AEAD
}

// ParseKey makes a key of base64 text (standard or URL alphabet, padded or
// not, spaces around ignored) or of exactly KeySize raw bytes.
// Errors never quote the input.
func ParseKey(b []byte) (Key, error) {
	raw := b
	if len(b) != KeySize {
		var err error
		if raw, err = decodeBase64(bytes.TrimSpace(b)); err != nil || len(raw) != KeySize {
			return Key{}, fmt.Errorf("vault: a master key is base64 of %d bytes, or %d raw bytes (got %d bytes that are neither)", KeySize, KeySize, len(b))
		}
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return Key{}, fmt.Errorf("vault: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Key{}, fmt.Errorf("vault: %w", err)
	}
	return Key{id: keyID(raw), aead: aead}, nil
}

func decodeBase64(s []byte) ([]byte, error) {
	var errs []error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		raw, err := enc.DecodeString(string(s))
		if err == nil {
			return raw, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// keyID names a key by a digest of it — domain-separated, so the id is no
// digest anything else computes — and never by any of its bytes.
func keyID(raw []byte) string {
	sum := sha256.Sum256(append([]byte("herald vault key id\x00"), raw...))
	return hex.EncodeToString(sum[:4])
}

// ID names the key in every record it seals: 8 hex characters.
func (k Key) ID() string { return k.id }

// String is the key's id: never its bytes.
func (k Key) String() string { return "vault key " + k.id }

// Format prints String whatever the verb, so %#v or %x cannot reach the
// cipher underneath.
func (k Key) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// LogValue logs the key's id.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

// MarshalJSON writes the key's id.
func (k Key) MarshalJSON() ([]byte, error) { return []byte(`"` + k.String() + `"`), nil }

// LoadKey reads the master key cfg names: MasterKeyFile if set, else the
// variable MasterKeyEnv, looked up with getenv (config flows from main; this
// package reads no environment of its own). ErrNoKey when neither holds one.
// Errors name the setting, never the key.
func LoadKey(cfg Config, getenv func(string) string) (Key, error) {
	cfg = cfg.WithDefaults()
	if cfg.MasterKeyFile != "" {
		k, err := ReadKeyFile(cfg.MasterKeyFile)
		if err != nil {
			return Key{}, fmt.Errorf("vault.master_key_file: %w", err)
		}
		return k, nil
	}
	v := ""
	if getenv != nil {
		v = getenv(cfg.MasterKeyEnv)
	}
	if strings.TrimSpace(v) == "" {
		return Key{}, fmt.Errorf("vault.master_key_env: %s is not set: %w", cfg.MasterKeyEnv, ErrNoKey)
	}
	k, err := ParseKey([]byte(v))
	if err != nil {
		return Key{}, fmt.Errorf("vault.master_key_env: %s: %w", cfg.MasterKeyEnv, err)
	}
	return k, nil
}

// LoadKeyring is LoadKey's key as the current one, with the previous keys
// cfg names.
func LoadKeyring(cfg Config, getenv func(string) string) (*Keyring, error) {
	current, err := LoadKey(cfg, getenv)
	if err != nil {
		return nil, err
	}
	var previous []Key
	for i, f := range cfg.PreviousKeyFiles {
		k, err := ReadKeyFile(f)
		if err != nil {
			return nil, fmt.Errorf("vault.previous_key_files[%d]: %w", i, err)
		}
		previous = append(previous, k)
	}
	return NewKeyring(current, previous...)
}

// ReadKeyFile reads a key from a file, in either format ParseKey takes.
func ReadKeyFile(path string) (Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Key{}, err
	}
	k, err := ParseKey(b)
	if err != nil {
		return Key{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// GenerateKeyFile writes a new random key to path as base64 text, readable
// by its owner only, and returns it. It never replaces an existing file: a
// key lost is every credential sealed under it lost.
func GenerateKeyFile(path string) (Key, error) {
	raw := make([]byte, KeySize)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails: it crashes the program instead
	text := base64.StdEncoding.EncodeToString(raw) + "\n"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Key{}, fmt.Errorf("vault: %s exists already; it is never replaced", path)
		}
		return Key{}, fmt.Errorf("vault: %w", err)
	}
	_, err = f.WriteString(text)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return Key{}, fmt.Errorf("vault: writing %s: %w", path, err)
	}
	return ParseKey(raw)
}
