package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/erasure"
	"github.com/heraldhq/herald/shared/health"
	"github.com/heraldhq/herald/shared/preferencepage"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/suppression"
	"github.com/heraldhq/herald/shared/unsubscribe"
)

// startHTTP opens the operations listener (http.listen) for probes and
// scrapers, and the public one (api.listen) for what outsiders reach, only
// if a service of this process answers them: a process of workers exposes
// nothing outsiders could call. The two share no route, so exposing the
// public one exposes nothing of operations.
func (a *App) startHTTP(ctx context.Context) error {
	opsLn, err := net.Listen("tcp", a.cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("http.listen: %w", err)
	}
	a.opsAddr = opsLn.Addr()
	var publicLn net.Listener
	if ServesOutsiders(a.cfg.Services) {
		if publicLn, err = net.Listen("tcp", a.cfg.API.Listen); err != nil {
			_ = opsLn.Close()
			return fmt.Errorf("api.listen: %w", err)
		}
		a.publicAddr, a.public = publicLn.Addr(), http.NewServeMux()
	}
	if err := a.links(ctx); err != nil {
		_ = opsLn.Close()
		if publicLn != nil {
			_ = publicLn.Close()
		}
		return err
	}
	ops := http.NewServeMux()
	ops.Handle("GET /healthz", health.LiveHandler())
	ops.Handle("GET /readyz", a.checks.ReadyHandler())
	ops.Handle("GET /metrics", a.tel.Handler())
	a.serve("http.listen", opsLn, ops)
	if publicLn != nil {
		a.serve("api.listen", publicLn, a.public)
	}
	return nil
}

// The timeouts of both listeners, so that no client holds a connection
// open at will. The largest body read is an API request (api.max_body_bytes,
// 1 MiB by default): ten seconds reads it on a slow link. Writing leaves a
// large document time to reach a slow client. An idle keep-alive
// connection is closed after a minute.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 2 * time.Minute
	idleTimeout       = time.Minute
)

// serve serves h on ln until Stop shuts the server down.
func (a *App) serve(name string, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout}
	a.servers = append(a.servers, srv)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.logger.Error("http server stopped", "listener", name, "error", err)
		}
	}()
}

// links, when links are configured, lets delivery sign document, one-click
// unsubscribe and preference page links, and serves them where the process
// has a public listener.
func (a *App) links(ctx context.Context) error {
	if a.linkKey == nil {
		return nil
	}
	// Without documents.public_url, links point at the public listener:
	// this process's (with the port it got for :0), else where the api's
	// listens.
	base := a.cfg.API.Listen
	if a.publicAddr != nil {
		base = a.publicAddr.String()
	}
	public := cmp.Or(a.cfg.Documents.PublicURL, "http://"+base)
	var s signers
	var err error
	if s.documents, err = documents.NewSigner(a.linkKey, public, a.cfg.Documents.LinkTTL); err != nil {
		return fmt.Errorf("documents.public_url: %w", err)
	}
	if s.unsubscribes, err = unsubscribe.NewSigner(a.linkKey, public); err != nil {
		return fmt.Errorf("documents.public_url: %w", err)
	}
	if s.preferences, err = preferencepage.NewSigner(a.linkKey, public); err != nil {
		return fmt.Errorf("documents.public_url: %w", err)
	}
	a.emailA.Links, a.emailA.Unsubscribe, a.emailA.Preferences = s.documents, s.unsubscribes, s.preferences
	for ch, adapter := range a.textA {
		adapter.Preferences = s.preferences
		a.textA[ch] = adapter
	}
	if a.public == nil {
		return nil
	}
	return a.serveLinks(ctx, s)
}

// signers are the public links' signers, each under its own key derived
// from the one link secret.
type signers struct {
	documents    *documents.Signer
	unsubscribes *unsubscribe.Signer
	preferences  *preferencepage.Signer
}

// serveLinks serves signed document links, one-click unsubscribe links and
// the preference page on the public listener.
func (a *App) serveLinks(ctx context.Context, s signers) error {
	store, err := documents.Open(ctx, a.js)
	if err != nil {
		return err
	}
	a.public.Handle("GET "+documents.LinkPath+"{name...}", documents.Handler(store, s.documents, a.logger))
	suppressions, err := suppression.Open(ctx, a.js)
	if err != nil {
		return err
	}
	dir, err := recipient.Open(ctx, a.js)
	if err != nil {
		return err
	}
	// The categories of the routes in effect: the page's rows, and which
	// no one may switch off.
	page, err := preferencepage.New(preferencepage.Config{Directory: dir, Signer: s.preferences,
		Categories: router.Categories(a.routes().WithDefaults().Routes), Logger: a.logger.With("service", "preferences")})
	if err != nil {
		return err
	}
	a.public.Handle("GET "+preferencepage.Path+"{token}", page)
	a.public.Handle("POST "+preferencepage.Path+"{token}", page)
	h := unsubscribe.Handler(suppressions, page.Unsubscribe, erasure.Hasher(a.linkKey), s.unsubscribes, a.logger.With("service", "unsubscribe"))
	a.public.Handle("GET "+unsubscribe.Path+"{token}", h)
	a.public.Handle("POST "+unsubscribe.Path+"{token}", h)
	return nil
}
