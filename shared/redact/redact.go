// Package redact keeps the credentials of connection URLs out of logs and
// errors: the password of nats://user:password@host or
// redis://:password@host, the token of nats://token@host. Everything that
// connects with a URL, or reports one, passes it — and the errors it gets
// back, which often quote it (net/url's parse errors do) — through here.
package redact

import (
	"net/url"
	"strconv"
	"strings"
)

// Mask is what a secret is replaced with.
const Mask = "***"

// URL hides the credentials of a URL, or of each URL of a comma-separated
// list (as NATS accepts), keeping the user name:
// redis://user:***@host:6379/0. Anything without credentials is returned
// as is.
func URL(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if c, ok := credentials(p); ok {
			parts[i] = c.prefix + c.masked() + c.suffix
		}
	}
	return strings.Join(parts, ",")
}

// Error returns err with the credentials of every URL given hidden from
// its message, however the message quotes them (as given, %-decoded, or
// Go-quoted as url.Error does). It still unwraps to err, so errors.Is and
// errors.As work; nil stays nil.
func Error(err error, urls ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, u := range urls {
		if u != "" {
			msg = strings.ReplaceAll(msg, u, URL(u))
		}
		for _, p := range strings.Split(u, ",") {
			if c, ok := credentials(p); ok {
				for _, s := range spellings(c.secret) {
					msg = strings.ReplaceAll(msg, s, Mask)
				}
			}
		}
	}
	if msg == err.Error() {
		return err
	}
	return &redacted{err: err, msg: msg}
}

type redacted struct {
	err error
	msg string
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

// userinfo is a URL cut around its credentials.
type userinfo struct {
	prefix, user, secret, suffix string
	hasUser                      bool
}

func (c userinfo) masked() string {
	if c.hasUser {
		return c.user + ":" + Mask
	}
	return Mask
}

// credentials finds the user information of scheme://userinfo@host… by
// hand, not with net/url: the URLs that most need hiding are the ones it
// cannot parse. Up to the last @ counts, so a password holding an
// unescaped @ or / is hidden whole.
func credentials(s string) (userinfo, bool) {
	scheme, rest, ok := strings.Cut(s, "://")
	at := strings.LastIndex(rest, "@")
	if !ok || at < 0 {
		return userinfo{}, false
	}
	c := userinfo{prefix: scheme + "://", suffix: rest[at:]}
	user, password, hasPassword := strings.Cut(rest[:at], ":")
	if hasPassword {
		c.user, c.secret, c.hasUser = user, password, true
	} else {
		c.secret = user // a token
	}
	return c, c.secret != ""
}

// spellings are the ways a secret may appear in a message.
func spellings(secret string) []string {
	out := []string{secret}
	if s, err := url.PathUnescape(secret); err == nil {
		out = append(out, s)
	}
	if s, err := url.QueryUnescape(secret); err == nil {
		out = append(out, s)
	}
	quoted := strconv.Quote(secret)
	return append(out, quoted[1:len(quoted)-1])
}
