package app

import "fmt"

// LinkSecret is the link secret the configuration names
// (documents.link_secret_env or documents.link_secret_file), read as the
// services read it, at least 32 bytes: what signs document and unsubscribe
// links, and keys the hashes an erasure leaves in an address's place. Nil,
// and no error, when none is configured.
func LinkSecret(cfg Config) ([]byte, error) {
	d := cfg.Documents
	if d.LinkSecretEnv == "" && d.LinkSecretFile == "" {
		return nil, nil
	}
	key, err := (&App{cfg: cfg}).secret("documents.link_secret_env", d.LinkSecretEnv, d.LinkSecretFile)
	if err != nil {
		return nil, err
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("documents.link_secret_env: the link secret must be at least 32 bytes (got %d)", len(key))
	}
	return []byte(key), nil
}
