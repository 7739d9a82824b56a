package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/health"
	"github.com/heraldhq/herald/shared/suppression"
	"github.com/heraldhq/herald/shared/unsubscribe"
)

// startHTTP opens both listeners: operations (http.listen) for probes and
// scrapers, public (api.listen) for what outsiders reach. They share no
// route, so exposing the public one exposes nothing of operations.
func (a *App) startHTTP(ctx context.Context) error {
	opsLn, err := net.Listen("tcp", a.cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("http.listen: %w", err)
	}
	publicLn, err := net.Listen("tcp", a.cfg.API.Listen)
	if err != nil {
		_ = opsLn.Close()
		return fmt.Errorf("api.listen: %w", err)
	}
	a.opsAddr, a.publicAddr = opsLn.Addr(), publicLn.Addr()
	public := http.NewServeMux()
	a.public = public
	if err := a.serveLinks(ctx, public); err != nil {
		_, _ = opsLn.Close(), publicLn.Close()
		return err
	}
	ops := http.NewServeMux()
	ops.Handle("GET /healthz", health.LiveHandler())
	ops.Handle("GET /readyz", a.checks.ReadyHandler())
	ops.Handle("GET /metrics", a.tel.Handler())
	a.serve("http.listen", opsLn, ops)
	a.serve("api.listen", publicLn, public)
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

// serveLinks, when links are configured, serves signed document links and
// one-click unsubscribe links, and lets delivery sign them.
func (a *App) serveLinks(ctx context.Context, mux *http.ServeMux) error {
	if a.linkKey == nil {
		return nil
	}
	public := cmp.Or(a.cfg.Documents.PublicURL, "http://"+a.publicAddr.String())
	signer, err := documents.NewSigner(a.linkKey, public, a.cfg.Documents.LinkTTL)
	if err != nil {
		return fmt.Errorf("documents.public_url: %w", err)
	}
	store, err := documents.Open(ctx, a.js)
	if err != nil {
		return err
	}
	mux.Handle("GET "+documents.LinkPath+"{name...}", documents.Handler(store, signer, a.logger))
	a.emailA.Links = signer

	unsubscribes, err := unsubscribe.NewSigner(a.linkKey, public)
	if err != nil {
		return fmt.Errorf("documents.public_url: %w", err)
	}
	suppressions, err := suppression.Open(ctx, a.js)
	if err != nil {
		return err
	}
	h := unsubscribe.Handler(suppressions, unsubscribes, a.logger.With("service", "unsubscribe"))
	mux.Handle("GET "+unsubscribe.Path+"{token}", h)
	mux.Handle("POST "+unsubscribe.Path+"{token}", h)
	a.emailA.Unsubscribe = unsubscribes
	return nil
}
