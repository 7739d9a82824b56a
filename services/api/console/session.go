package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/services/api"
)

// SessionsBucket holds the console's sessions (streams/KV_console_sessions):
// the digest of the cookie's token → who signed in and the session's CSRF
// token. The token itself is only in the operator's cookie.
const SessionsBucket = "console_sessions"

// sessionMaxAge is the bucket's max age: no session outlives it.
const sessionMaxAge = 12 * time.Hour

// cookieName is the session cookie.
const cookieName = "herald_console"

// session is one operator signed in.
type session struct {
	// KeyID is the API key's public id: who, in the audit log.
	KeyID string `json:"key_id"`
	// Observer sessions look and change nothing (an observer key's).
	Observer bool      `json:"observer,omitempty"`
	CSRF     string    `json:"csrf"`
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires"`

	digest string
}

type sessions struct {
	kv  jetstream.KeyValue
	ttl time.Duration
	now func() time.Time
}

// create starts a session for p and returns the cookie's token.
func (s *sessions) create(ctx context.Context, p api.Principal) (string, *session, error) {
	token, csrf := rand.Text()+rand.Text(), rand.Text()
	now := s.now()
	ses := &session{KeyID: p.KeyID, Observer: p.Observer, CSRF: csrf, Created: now, Expires: now.Add(s.ttl), digest: digest(token)}
	b, err := json.Marshal(ses)
	if err != nil {
		return "", nil, err
	}
	if _, err := s.kv.Create(ctx, ses.digest, b); err != nil {
		return "", nil, err
	}
	return token, ses, nil
}

// errNoSession is a request without a live session.
var errNoSession = errors.New("no session")

func (s *sessions) get(ctx context.Context, token string) (*session, error) {
	if token == "" {
		return nil, errNoSession
	}
	d := digest(token)
	e, err := s.kv.Get(ctx, d)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, err
	}
	var ses session
	if err := json.Unmarshal(e.Value(), &ses); err != nil {
		return nil, err
	}
	if !s.now().Before(ses.Expires) {
		return nil, errNoSession
	}
	ses.digest = d
	return &ses, nil
}

func (s *sessions) end(ctx context.Context, ses *session) error {
	return s.kv.Purge(ctx, ses.digest)
}

// digest names a session in the bucket without the token itself: reading
// the bucket does not let anyone sign in.
func digest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// page wraps a handler that needs a signed-in operator: without a session,
// to the sign-in page (back here after).
func (c *Console) page(h func(http.ResponseWriter, *http.Request, *session)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ses, ok := c.session(w, r)
		if !ok {
			return
		}
		h(w, r, ses)
	})
}

// action wraps a state change: a session, the request from the console's
// own origin, and the session's CSRF token in the form. An observer's
// session changes nothing but itself (signing out).
func (c *Console) action(h func(http.ResponseWriter, *http.Request, *session)) http.Handler {
	return c.act(true, h)
}

// signOutAction is the one action an observer may take.
func (c *Console) signOutAction(h func(http.ResponseWriter, *http.Request, *session)) http.Handler {
	return c.act(false, h)
}

func (c *Console) act(changes bool, h func(http.ResponseWriter, *http.Request, *session)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ses, ok := c.session(w, r)
		if !ok {
			return
		}
		if changes && ses.Observer {
			c.audit.record(r.Context(), ses.KeyID, "refused", r.URL.Path, errors.New("an observer changes nothing"))
			c.fail(w, r, ses, http.StatusForbidden, "You are signed in with an observer key: it shows everything and changes nothing. Sign in with an admin key to act.")
			return
		}
		if !sameOrigin(r) {
			c.fail(w, r, ses, http.StatusForbidden, "This request came from another site.")
			return
		}
		if err := r.ParseForm(); err != nil {
			c.fail(w, r, ses, http.StatusBadRequest, "The form could not be read.")
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(ses.CSRF)) != 1 {
			c.fail(w, r, ses, http.StatusForbidden, "This form has expired or did not come from the console: reload the page and try again.")
			return
		}
		h(w, r, ses)
	})
}

// session finds the request's session, or answers: a redirect to sign in
// for a page, 401 for a live stream, 503 when sessions or keys cannot be
// read.
func (c *Console) session(w http.ResponseWriter, r *http.Request) (*session, bool) {
	var token string
	if ck, err := r.Cookie(cookieName); err == nil {
		token = ck.Value
	}
	ses, err := c.sessions.get(r.Context(), token)
	if err == nil {
		err = c.keyLive(r.Context(), ses)
	}
	switch {
	case errors.Is(err, errNoSession):
		if r.Method == http.MethodGet && r.Header.Get("Accept") != "text/event-stream" {
			http.Redirect(w, r, Path+"signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		} else {
			c.fail(w, r, nil, http.StatusUnauthorized, "Your session has ended: sign in again.")
		}
		return nil, false
	case err != nil:
		c.cfg.Logger.Warn("console: reading a session", "error", err)
		c.fail(w, r, nil, http.StatusServiceUnavailable, "Sessions cannot be checked right now.")
		return nil, false
	}
	return ses, true
}

// keyLive ends a session with the key it was opened with: once the key is
// revoked, its sessions are refused as soon as the API refuses the key
// itself (the Authenticator's watch, within seconds), not when they
// expire. It reads memory only.
func (c *Console) keyLive(ctx context.Context, ses *session) error {
	_, err := c.cfg.Keys.Active(ctx, ses.KeyID)
	if errors.Is(err, api.ErrInvalidKey) {
		return errNoSession
	}
	return err
}

// sameOrigin refuses a request a browser says came from elsewhere.
// SameSite=Strict already keeps the cookie off such requests; this holds
// for browsers that send Origin but not SameSite.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" && r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, http.StatusOK, "signin.html", view{Title: "Sign in", Data: signInForm{Next: safeNext(r.URL.Query().Get("next"))}})
}

type signInForm struct {
	Next  string
	Error string
}

// signIn exchanges an admin key for a session. The key is not kept: only
// its id, for the audit log.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		c.fail(w, r, nil, http.StatusForbidden, "This request came from another site.")
		return
	}
	if err := r.ParseForm(); err != nil {
		c.fail(w, r, nil, http.StatusBadRequest, "The form could not be read.")
		return
	}
	form := signInForm{Next: safeNext(r.PostForm.Get("next"))}
	p, err := c.cfg.Keys.Authenticate(r.Context(), strings.TrimSpace(r.PostForm.Get("key")))
	switch {
	case errors.Is(err, api.ErrInvalidKey):
		c.audit.record(r.Context(), "", "signin", "", errors.New("invalid key"))
		form.Error = "That key opens nothing: check it, or ask for a new one (herald keys create --admin)."
		c.render(w, http.StatusUnauthorized, "signin.html", view{Title: "Sign in", Data: form})
		return
	case err != nil:
		c.cfg.Logger.Warn("console: reading API keys", "error", err)
		c.fail(w, r, nil, http.StatusServiceUnavailable, "Keys cannot be checked right now.")
		return
	case !p.Admin && !p.Observer:
		c.audit.record(r.Context(), p.KeyID, "signin", "", errors.New("not an admin key"))
		form.Error = "The console is for operators: that key is a tenant's. Sign in with an admin or observer key."
		c.render(w, http.StatusForbidden, "signin.html", view{Title: "Sign in", Data: form})
		return
	}
	token, ses, err := c.sessions.create(r.Context(), p)
	if err != nil {
		c.cfg.Logger.Warn("console: creating a session", "error", err)
		c.fail(w, r, nil, http.StatusServiceUnavailable, "Sessions cannot be written right now.")
		return
	}
	c.audit.record(r.Context(), ses.KeyID, "signin", "", nil)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: Path, Expires: ses.Expires,
		HttpOnly: true, Secure: c.cfg.Secure, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, form.Next, http.StatusSeeOther)
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request, ses *session) {
	err := c.sessions.end(r.Context(), ses)
	c.audit.record(r.Context(), ses.KeyID, "signout", "", err)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Path, MaxAge: -1,
		HttpOnly: true, Secure: c.cfg.Secure, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Path+"signin", http.StatusSeeOther)
}

// safeNext is where to go after signing in: a console page, never another
// site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Path) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return Path
	}
	return next
}
