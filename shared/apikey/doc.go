// Package apikey is how callers of Herald's HTTP API prove who they are.
//
// A key reads hk_<id>_<secret>: the id is public (it names the key in
// `herald keys list` and in logs), the secret is 32 random bytes. Both are
// lowercase base32 without padding, so a key is one word a double-click
// selects:
//
//	hk_k7q2m4xvrpta_3tgd5kwzqh…   (12 characters of id, 52 of secret)
//
// Only the SHA-256 of the secret is kept, in the JetStream key-value bucket
// "api_keys" (declared in streams/KV_api_keys), keyed by the id. The plain
// key exists once: Create returns it, the operator hands it over, and
// nothing can show it again — a lost key is revoked and replaced.
//
// A key carries scopes: send (events, notifications), read (status,
// lists) and admin (every tenant, tenants and keys, the DLQ). A tenant key
// belongs to one tenant and never holds admin; an admin key belongs to no
// tenant and reaches them all.
//
// # Authenticating
//
// An Authenticator answers from memory: it loads every key when it starts
// and follows the bucket with a watch, so a key created or revoked on any
// replica reaches every other within moments, and no request reads the
// bucket. The secret is compared as a digest in constant time. Every
// refusal — a malformed, unknown, revoked key or a wrong secret — is the
// same ErrUnauthorized, which never quotes what was presented. A key made
// a moment ago elsewhere is refused until the watch brings it. An
// Authenticator whose watch ended (Stop, a connection closed for good)
// takes no key rather than miss a revocation, and says so with
// ErrUnavailable — the server's trouble, not the key's — so a good key is
// tried again rather than thrown away. Active asks, by id, whether a key
// is still live: a session opened with it ends with it. Revoking marks the
// record, which stays for `herald keys list` to show.
//
// When a key was last used is written at most once per LastUsedEvery (a
// minute) per key, by a background writer with a bounded queue, never on
// the request's path:
//
//	keys, err := apikey.Open(ctx, js)
//	auth, err := apikey.NewAuthenticator(keys, apikey.AuthConfig{Logger: logger})
//	if err := auth.Start(ctx); err != nil { … }
//	defer auth.Stop()
//	key, err := auth.Authenticate(ctx, presented)
//	if err != nil || !key.Allows(apikey.Send) || !key.Reaches(tenant) { … }
package apikey
