// Package vault keeps tenants' provider credentials — SES keys, a SendGrid
// API key, an SMTP password — encrypted at rest in the JetStream key-value
// bucket "credentials", and decrypts them only for the code that sends.
//
// # The master key
//
// Everything is sealed under a master key of 32 random bytes, loaded once
// in main with LoadKey from the environment variable vault.master_key_env
// (default HERALD_MASTER_KEY, base64) or the file vault.master_key_file
// (base64 text, or exactly 32 raw bytes). Make one with
//
//	(umask 077; openssl rand -base64 32 > master.key)
//
// or GenerateKeyFile, which `herald dev` calls for .herald/master.key. A key
// is known by its id, 8 hex characters of a domain-separated SHA-256 of it:
// the id names the key without revealing anything of it. Nothing in this
// package prints, logs or returns key bytes.
//
// # Sealing
//
// A record is sealed with AES-256-GCM under a random 12-byte nonce, with
// the tenant and provider name (tenant + "\x00" + name) as additional data:
// a ciphertext copied to another tenant or another provider name does not
// decrypt. The record names its key id, so a Keyring holding several keys
// opens each record with the right one, and one sealed under a key it does
// not hold fails with ErrUnknownKey naming that id.
//
// Everything Get returns — type, endpoint, host, secrets — comes from the
// sealed payload. The record also keeps the settings in the clear, for List
// to show without decrypting, but they are never used to send: editing the
// bucket without the key cannot send a secret elsewhere.
//
// # Plaintext
//
// A Credential's secrets are Secret values: whatever prints them — fmt with
// any verb, slog, encoding/json — shows the masked preview ("****" and the
// last 4 characters, or just "****" for a secret shorter than 16), and only
// Secret.Reveal gives the plaintext, to hand to a provider at send time.
//
// # Rotation
//
// Rotate re-encrypts every record under a new key while the old one still
// decrypts. With no downtime:
//
//  1. Make the new key the current one (vault.master_key_file) and name
//     the old one in vault.previous_key_files; restart the services. They
//     now seal under the new key and open under either.
//  2. Run `herald vault rotate --new-key-file NEW` (with the old key as
//     HERALD_MASTER_KEY or --master-key-file): Rotate rewrites each record
//     still under the old key, at the revision it read, so a concurrent Put
//     is never overwritten. Stopped half-way, it loses nothing — each
//     record opens under one key or the other — and running it again
//     finishes the job.
//  3. Drop the old key from vault.previous_key_files and restart. The
//     bucket keeps one revision per key, so the records sealed under the
//     old key are gone from it (the server reclaims their bytes on disk as
//     it compacts its files). The webhook endpoints' bucket keeps several,
//     and webhooks.Reseal, which the command runs next, removes every
//     earlier revision that holds a secret it reseals.
package vault
