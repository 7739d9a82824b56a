package unsubscribe

import (
	"context"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/suppression"
)

// Store records opt-outs (suppression.Store).
type Store interface {
	Add(ctx context.Context, e suppression.Entry) (suppression.Entry, error)
	// AddConcealed records e holding hash(address) in the address's place.
	AddConcealed(ctx context.Context, e suppression.Entry, hash func(string) string) (suppression.Entry, error)
}

// Hash is the keyed hash an erasure leaves in an erased address's place
// (erasure.Hasher).
type Hash func(address string) string

// OptOut records a subscriber's unsubscribe as their preference: category
// switched off for email (preferencepage.Page.Unsubscribe). An error
// matching resource.ErrNotFound says the subscriber is gone; one matching
// ErrRequired, that the category cannot be switched off.
type OptOut func(ctx context.Context, tenant, subscriber, category string) error

// ErrRequired: the link's category is one routes now mark required (it
// was not when the email was sent), which no one may leave.
var ErrRequired = errors.New("unsubscribe: the category is required and cannot be switched off")

// Handler serves Path{token}: GET shows the page asking to confirm, POST
// unsubscribes — through optOut for a subscriber (nil: as a suppression,
// like an inline address), and for a subscriber the tenant no longer has as
// a suppression concealed under hash. Mount it at "GET "+Path+"{token}"
// and "POST "+Path+"{token}".
func Handler(store Store, optOut OptOut, hash Hash, signer *Signer, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		o, err := signer.Verify(r.PathValue("token"))
		if err != nil {
			w.WriteHeader(http.StatusNotFound)
			_ = page.Execute(w, view{Invalid: true})
			return
		}
		v := view{Opt: o}
		if r.Method == http.MethodPost {
			// RFC 8058: the body is List-Unsubscribe=One-Click; a form's
			// button posts the same. Either unsubscribes: the signature,
			// not the body, is what proves the link.
			ctx, cancel := context.WithTimeout(resource.WithActor(r.Context(), "unsubscribe-link"), 10*time.Second)
			defer cancel()
			err := record(ctx, store, optOut, hash, o)
			if errors.Is(err, ErrRequired) {
				// Conflict, not "try again": no retry will ever switch it off.
				logger.InfoContext(ctx, "unsubscribe from a required category refused", "tenant", o.Tenant, "category", o.Category)
				w.WriteHeader(http.StatusConflict)
				v.Required = true
				_ = page.Execute(w, v)
				return
			}
			if err != nil {
				logger.ErrorContext(ctx, "unsubscribe not recorded", "tenant", o.Tenant, "category", o.Category, "error", err)
				w.WriteHeader(http.StatusServiceUnavailable)
				v.Failed = true
				_ = page.Execute(w, v)
				return
			}
			logger.InfoContext(ctx, "recipient unsubscribed", "tenant", o.Tenant, "category", o.Category)
			v.Done = true
		}
		_ = page.Execute(w, v)
	})
}

// record records o: a subscriber's preference, or a suppression of the
// address in the category — for an inline address, and for a subscriber
// the tenant no longer has, whose opt-out must hold all the same should
// the address be written inline later. That one is concealed: the
// subscriber may have been erased, and an old link must not bring her
// address back. The link is in an email: the opt-out is from email.
func record(ctx context.Context, store Store, optOut OptOut, hash Hash, o Opt) error {
	e := suppression.Entry{Tenant: o.Tenant, Channel: event.ChannelEmail, Address: o.Address, Category: o.Category,
		Reason: suppression.Unsubscribed, Source: "unsubscribe link"}
	if o.Subscriber == "" || optOut == nil {
		_, err := store.Add(ctx, e)
		return err
	}
	err := optOut(ctx, o.Tenant, o.Subscriber, o.Category)
	if !errors.Is(err, resource.ErrNotFound) {
		return err
	}
	_, err = store.AddConcealed(ctx, e, hash)
	return err
}

type view struct {
	Opt
	Invalid, Done, Failed, Required bool
}

// page is the one page, in plain HTML; html/template escapes what the
// token carries.
var page = template.Must(template.New("unsubscribe").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Unsubscribe</title></head>
<body style="font-family: -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem; color: #222;">
{{- if .Invalid}}
<h1 style="font-size: 1.4rem;">This link does not work</h1>
<p>It may have been altered or cut short. Try the unsubscribe link of a more recent message.</p>
{{- else if .Done}}
<h1 style="font-size: 1.4rem;">You are unsubscribed</h1>
<p><strong>{{.Address}}</strong> will no longer receive {{.Category}} notifications from {{.Tenant}}.</p>
{{- else if .Required}}
<h1 style="font-size: 1.4rem;">These notifications are required</h1>
<p>{{.Category}} notifications from {{.Tenant}} are required and cannot be switched off: the business depends on them. Nothing was changed.</p>
{{- else if .Failed}}
<h1 style="font-size: 1.4rem;">Please try again</h1>
<p>Your unsubscribe could not be recorded just now. Nothing was changed; try again in a minute.</p>
{{- else}}
<h1 style="font-size: 1.4rem;">Unsubscribe?</h1>
<p>Stop sending {{.Category}} notifications from {{.Tenant}} to <strong>{{.Address}}</strong>?</p>
<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit" style="font-size: 1rem; padding: .6rem 1.2rem;">Unsubscribe</button></form>
{{- end}}
</body></html>
`))
