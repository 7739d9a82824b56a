package preferencepage_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/erasure"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/preferencepage"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/suppression"
	"github.com/heraldhq/herald/shared/unsubscribe"
)

// testBundle is the page served over HTTP on a real NATS, for tenant acme
// whose routes send alerts (switchable) and documents (required).
type testBundle struct {
	js     jetstream.JetStream
	dir    *recipient.Directory
	signer *preferencepage.Signer
	page   *preferencepage.Page
	url    string
}

var categories = []recipient.Category{{Name: "alerts"}, {Name: "documents", Required: true}}

func setup(t *testing.T) *testBundle {
	t.Helper()
	nats := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)
	dir, err := recipient.Open(ctx, nats.JS)
	require.NoError(t, err)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	signer, err := preferencepage.NewSigner(secret, srv.URL)
	require.NoError(t, err)
	page, err := preferencepage.New(preferencepage.Config{Directory: dir, Signer: signer, Categories: categories})
	require.NoError(t, err)
	mux.Handle("GET "+preferencepage.Path+"{token}", page)
	mux.Handle("POST "+preferencepage.Path+"{token}", page)
	return &testBundle{js: nats.JS, dir: dir, signer: signer, page: page, url: srv.URL}
}

// subscriber stores one of acme's subscribers, reachable by email and SMS.
func (b *testBundle) subscriber(t *testing.T, id, locale string) string {
	t.Helper()
	_, err := b.dir.Subscribers.Put(heraldtest.Context(t), recipient.Subscriber{Tenant: "acme", ID: id, Email: "olga@zarya.example",
		Phone: "+79160000000", Locale: locale})
	require.NoError(t, err)
	return b.signer.Link(preferencepage.Whose{Tenant: "acme", Subscriber: id})
}

type answer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, method, link string, form url.Values) answer {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, link, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// stored are the subscriber's own preferences, or nil when none are kept.
func (b *testBundle) stored(t *testing.T, id string) recipient.Choices {
	t.Helper()
	p, _, err := b.dir.Preferences.Get(heraldtest.Context(t), recipient.PreferencesKey("acme", id))
	if err != nil {
		require.ErrorIs(t, err, resource.ErrNotFound)
		return nil
	}
	return p.Categories
}

// The page speaks the subscriber's language — their locale decides, a
// regional one too, English for a language it lacks — and lists the
// tenant's categories × the channels they have, the required one ticked
// and not switchable. It is kept out of caches and indexes, and loads
// nothing but its own style.
func TestThePageIsInTheSubscribersLanguage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for locale, want := range map[string][]string{
		"":      {`<html lang="en">`, "Notification preferences", "Choose which notifications from acme reach you, and how.", "<th>Email</th>", "always sent", ">Save<"},
		"fr":    {`<html lang="en">`, "Notification preferences"},
		"es-MX": {`<html lang="es">`, "Preferencias de notificación", "Elija qué notificaciones de acme le llegan, y cómo.", "<th>Correo</th>", "siempre se envían", ">Guardar<"},
		"ru":    {`<html lang="ru">`, "Настройки уведомлений", "Выберите, какие уведомления от acme вы получаете и как.", "<th>Эл. почта</th>", "отправляются всегда", ">Сохранить<"},
	} {
		a := do(t, http.MethodGet, b.subscriber(t, "u-"+locale, locale), nil)
		require.Equal(t, http.StatusOK, a.status, locale)
		for _, w := range want {
			require.Contains(t, a.body, w, locale)
		}
		require.Contains(t, a.body, `<input type="checkbox" name="alerts.sms" value="on" aria-label="alerts: SMS" checked>`, locale)
		require.Contains(t, a.body, `<input type="checkbox" name="alerts.email" value="on"`, locale)
		require.NotContains(t, a.body, `name="documents.`, "%s: a required category has no field to switch", locale)
		require.Contains(t, a.body, `<input type="checkbox" checked disabled aria-label="documents: SMS">`, locale)
		require.Contains(t, a.body, `<meta name="robots" content="noindex, nofollow">`)
		require.NotContains(t, a.body, "<script")
		require.Equal(t, "noindex, nofollow", a.header.Get("X-Robots-Tag"))
		require.Equal(t, "no-store", a.header.Get("Cache-Control"))
		require.Equal(t, "no-referrer", a.header.Get("Referrer-Policy"))
		require.Regexp(t, `^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'$`,
			a.header.Get("Content-Security-Policy"))
	}
	require.Nil(t, b.stored(t, "u-ru"), "a GET — a link scanner's — writes nothing")
}

// form is what a browser posts from the page: every field as the page
// wrote it, a ticked box's "on" after its hidden "off", unticking those
// untick names.
func form(t *testing.T, page string, untick ...string) url.Values {
	t.Helper()
	v := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="(hidden|checkbox)" name="([^"]+)" value="(on|off)"[^>]*?( checked)?>`).FindAllStringSubmatch(page, -1) {
		name := m[2]
		if m[1] == "hidden" || m[4] != "" && !strings.Contains(strings.Join(untick, " "), name) {
			v.Add(name, m[3])
		}
	}
	require.NotEmpty(t, v, "the page has a form")
	return v
}

// The page is a plain form: posted without JavaScript, it saves through
// the API's write path, and the page then shows what was saved.
func TestTheFormSavesWithoutJavaScript(t *testing.T) {
	t.Parallel()
	b := setup(t)
	link := b.subscriber(t, "u-olga", "ru")
	page := do(t, http.MethodGet, link, nil)
	a := do(t, http.MethodPost, link, form(t, page.body, "alerts.sms"))
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Contains(t, a.body, "Настройки сохранены.")
	require.Equal(t, recipient.Choices{"alerts": {event.ChannelEmail: true, event.ChannelSMS: false,
		event.ChannelInbox: true, event.ChannelPush: true}}, b.stored(t, "u-olga"))
	require.Contains(t, a.body, `<input type="checkbox" name="alerts.sms" value="on" aria-label="alerts: SMS">`)
	require.Contains(t, do(t, http.MethodGet, link, nil).body, `<input type="checkbox" name="alerts.sms" value="on" aria-label="alerts: SMS">`)

	// Ticked again, it is on again.
	a = do(t, http.MethodPost, link, url.Values{"alerts.sms": {"off", "on"}})
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, recipient.Choices{"alerts": {event.ChannelEmail: true, event.ChannelSMS: true,
		event.ChannelInbox: true, event.ChannelPush: true}}, b.stored(t, "u-olga"))
}

// A required category is shown on and cannot be switched off: a forged
// "off" for it is refused, naming it, and nothing is written — nor is a
// form naming what the page does not show.
func TestARequiredCategoryCannotBeSwitchedOff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	link := b.subscriber(t, "u-olga", "")
	a := do(t, http.MethodPost, link, url.Values{"alerts.sms": {"off"}, "documents.email": {"off"}})
	require.Equal(t, http.StatusUnprocessableEntity, a.status)
	require.Contains(t, a.body, "Nothing was saved: categories.documents: is required and cannot be switched off.")
	require.Nil(t, b.stored(t, "u-olga"))
	require.Contains(t, a.body, `<input type="checkbox" checked disabled aria-label="documents: Email">`)

	for name, bad := range map[string]url.Values{
		"a category not on the page": {"marketing.email": {"off"}},
		"a channel she lacks":        {"alerts.whatsapp": {"off"}},
		"neither on nor off":         {"alerts.sms": {"maybe"}},
	} {
		a := do(t, http.MethodPost, link, bad)
		require.Equal(t, http.StatusBadRequest, a.status, name)
		require.Contains(t, a.body, "Nothing was saved", name)
		require.Nil(t, b.stored(t, "u-olga"), name)
	}
}

// Whatever keeps a link from working — altered, cut short, another
// deployment's, a subscriber never created or erased — the answer is the
// same 404 page, GET or POST: it tells nobody what exists.
func TestABadLinkIsTheSame404WhateverTheReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	erased := b.subscriber(t, "u-erased", "ru")
	require.NoError(t, b.dir.Subscribers.Delete(heraldtest.Context(t), recipient.SubscriberKey("acme", "u-erased")))
	other, err := preferencepage.NewSigner([]byte(strings.Repeat("t", 32)), b.url)
	require.NoError(t, err)
	genuine := b.subscriber(t, "u-olga", "ru")
	links := map[string]string{
		"altered":              genuine[:len(genuine)-3] + "AAA",
		"cut short":            genuine[:len(genuine)-10],
		"another deployment's": other.Link(preferencepage.Whose{Tenant: "acme", Subscriber: "u-olga"}),
		"never a subscriber":   b.signer.Link(preferencepage.Whose{Tenant: "acme", Subscriber: "u-nobody"}),
		"another tenant's":     b.signer.Link(preferencepage.Whose{Tenant: "globex", Subscriber: "u-olga"}),
		"erased":               erased,
	}
	var first *answer
	for name, link := range links {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			a := do(t, method, link, url.Values{"alerts.sms": {"off"}})
			require.Equal(t, http.StatusNotFound, a.status, name)
			require.Contains(t, a.body, "This link does not work", name)
			require.Equal(t, "noindex, nofollow", a.header.Get("X-Robots-Tag"), name)
			if first == nil {
				first = &a
			}
			require.Equal(t, first.body, a.body, "%s %s answers as the others do", method, name)
		}
	}
	require.Nil(t, b.stored(t, "u-olga"))
	require.Nil(t, b.stored(t, "u-nobody"))
}

// A one-click unsubscribe from a subscriber's email is their preference:
// the category switched off for email, through the page's write path.
func TestUnsubscribingASubscriberSwitchesTheCategoryOffForEmail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.subscriber(t, "u-olga", "")
	ctx := heraldtest.Context(t)
	require.NoError(t, b.page.Unsubscribe(ctx, "acme", "u-olga", "alerts"))
	require.Equal(t, recipient.Choices{"alerts": {event.ChannelEmail: false}}, b.stored(t, "u-olga"))
	require.ErrorIs(t, b.page.Unsubscribe(ctx, "acme", "u-olga", "documents"), unsubscribe.ErrRequired, "a required category stays on")
	require.ErrorIs(t, b.page.Unsubscribe(ctx, "acme", "u-nobody", "alerts"), resource.ErrNotFound)
}

// A one-click link in an email sent while a category was optional, clicked
// once routes mark it required, answers a page saying so — 409, not a
// "try again" no retry would change — whether its subscriber exists or
// not, and nothing is written.
func TestAnOldUnsubscribeLinkForANowRequiredCategorySaysItIsRequired(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.subscriber(t, "u-olga", "ru")
	supp, err := suppression.Open(heraldtest.Context(t), b.js)
	require.NoError(t, err)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	signer, err := unsubscribe.NewSigner(secret, srv.URL)
	require.NoError(t, err)
	h := unsubscribe.Handler(supp, b.page.Unsubscribe, erasure.Hasher(secret), signer, slog.New(slog.DiscardHandler))
	mux.Handle("POST "+unsubscribe.Path+"{token}", h)

	for _, id := range []string{"u-olga", "u-nobody"} {
		link := signer.Link(unsubscribe.Opt{Tenant: "acme", Category: "documents", Address: "olga@zarya.example", Subscriber: id})
		a := do(t, http.MethodPost, link, url.Values{"List-Unsubscribe": {"One-Click"}})
		require.Equal(t, http.StatusConflict, a.status, id)
		require.Contains(t, a.body, "documents notifications from acme are required and cannot be switched off", id)
		require.NotContains(t, a.body, "try again", id)
	}
	require.Nil(t, b.stored(t, "u-olga"))
	list, err := supp.List(heraldtest.Context(t), "acme")
	require.NoError(t, err)
	require.Empty(t, list)
}
