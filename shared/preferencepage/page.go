package preferencepage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/unsubscribe"
)

// Config configures the page.
type Config struct {
	// Directory is where subscribers and their preferences are kept.
	// Required.
	Directory *recipient.Directory
	// Signer checks the links. Required.
	Signer *Signer
	// Categories are what the routes in effect send (router.Categories):
	// the page's rows, the required ones shown on and not switchable.
	Categories []recipient.Category
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Page serves Path{token}: GET shows a subscriber's preferences, POST
// saves them. Mount it at "GET "+Path+"{token}" and "POST "+Path+"{token}".
type Page struct {
	cfg      Config
	required []string
}

// New returns the page.
func New(cfg Config) (*Page, error) {
	if cfg.Directory == nil || cfg.Signer == nil {
		return nil, errors.New("preferencepage: a directory and a signer are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Page{cfg: cfg, required: recipient.RequiredOf(cfg.Categories)}, nil
}

// maxForm bounds what a POST may send: a form of every category and
// channel is a few kilobytes.
const maxForm = 32 << 10

// saveTimeout bounds one request's reads and write.
const saveTimeout = 10 * time.Second

func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setHeaders(w.Header())
	who, err := p.cfg.Signer.Verify(r.PathValue("token"))
	if err != nil {
		p.notFound(w)
		return
	}
	ctx, cancel := context.WithTimeout(resource.WithActor(r.Context(), "preference page"), saveTimeout)
	defer cancel()
	s, _, err := p.cfg.Directory.Subscribers.Get(ctx, recipient.SubscriberKey(who.Tenant, who.Subscriber))
	switch {
	case errors.Is(err, resource.ErrNotFound):
		p.notFound(w)
		return
	case err != nil:
		p.failed(ctx, w, textsFor(""), err)
		return
	}
	v := view{texts: textsFor(s.Locale), Tenant: s.Tenant}
	status := http.StatusOK
	if r.Method == http.MethodPost {
		if status = p.save(ctx, w, r, s, &v); status == http.StatusNotFound {
			p.notFound(w)
			return
		}
	}
	if err := p.rows(ctx, s, &v); err != nil {
		p.failed(ctx, w, v.texts, err)
		return
	}
	render(w, status, v)
}

// save records the form's choices through SetPreferences, the API's
// write path, and says how the page answers: 200 saved, 400 a form this
// page never sends, 422 a required category switched off (nothing
// written), 404 a subscriber gone meanwhile, 503 a store that did not
// answer.
func (p *Page) save(ctx context.Context, w http.ResponseWriter, r *http.Request, s recipient.Subscriber, v *view) int {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	choices, err := p.parse(r, s)
	if err != nil {
		v.Problem = fmt.Sprintf(v.texts.Refused, err)
		return http.StatusBadRequest
	}
	_, err = p.cfg.Directory.SetPreferences(ctx, s.Tenant, s.ID, choices, p.required, true)
	switch {
	case errors.Is(err, recipient.ErrInvalid):
		v.Problem = fmt.Sprintf(v.texts.Refused, err)
		return http.StatusUnprocessableEntity
	case errors.Is(err, resource.ErrNotFound):
		return http.StatusNotFound
	case err != nil:
		p.cfg.Logger.ErrorContext(ctx, "preferences not saved", "tenant", s.Tenant, "error", err)
		v.Failed = true
		return http.StatusServiceUnavailable
	}
	p.cfg.Logger.InfoContext(ctx, "preferences saved on the page", "tenant", s.Tenant, "choices", choices.String())
	v.Saved = true
	return http.StatusOK
}

// parse reads the form: a field "<category>.<channel>" per row and
// channel the page shows, "off" then — if its box is ticked — "on"; the
// last value counts. A field the page does not show, or another value,
// is refused: the form is not the page's.
func (p *Page) parse(r *http.Request, s recipient.Subscriber) (recipient.Choices, error) {
	if err := r.ParseForm(); err != nil {
		return nil, errors.New("the form could not be read")
	}
	fields := map[string][2]string{}
	for _, c := range p.cfg.Categories {
		for _, ch := range s.Channels() {
			fields[c.Name+"."+string(ch)] = [2]string{c.Name, string(ch)}
		}
	}
	choices := recipient.Choices{}
	for name, values := range r.PostForm {
		f, ok := fields[name]
		if !ok {
			return nil, fmt.Errorf("%.64q is not a choice on this page", name)
		}
		last := values[len(values)-1]
		if last != "on" && last != "off" {
			return nil, fmt.Errorf("%s: %.16q is neither on nor off", name, last)
		}
		if choices[f[0]] == nil {
			choices[f[0]] = map[event.Channel]bool{}
		}
		choices[f[0]][event.Channel(f[1])] = last == "on"
	}
	return choices, nil
}

// rows are the page's checkboxes: the tenant's categories × the channels
// the subscriber has, each ticked when a notification of it would reach
// them (Allows: their choice, else the tenant's default, else on).
func (p *Page) rows(ctx context.Context, s recipient.Subscriber, v *view) error {
	own, defaults, err := p.cfg.Directory.Choices(ctx, s.Tenant, s.ID)
	if err != nil {
		return err
	}
	for _, ch := range s.Channels() {
		v.Channels = append(v.Channels, v.texts.Channels[ch])
	}
	for _, c := range p.cfg.Categories {
		row := row{Category: c.Name, Required: c.Required}
		for _, ch := range s.Channels() {
			row.Boxes = append(row.Boxes, box{Name: c.Name + "." + string(ch), Label: c.Name + ": " + v.texts.Channels[ch],
				On: recipient.Allows(own, defaults, c.Name, ch, c.Required), Required: c.Required})
		}
		v.Rows = append(v.Rows, row)
	}
	return nil
}

// Unsubscribe records a one-click unsubscribe from a subscriber's email
// as their preference: category switched off for email, through the same
// write path as the page.
func (p *Page) Unsubscribe(ctx context.Context, tenant, subscriber, category string) error {
	// Before the subscriber is looked up: the answer is the same whether
	// she exists or not.
	if slices.Contains(p.required, category) {
		return fmt.Errorf("preferencepage: %s: %w", category, unsubscribe.ErrRequired)
	}
	_, err := p.cfg.Directory.SetPreferences(ctx, tenant, subscriber,
		recipient.Choices{category: {event.ChannelEmail: false}}, p.required, true)
	return err
}

// notFound is the one answer to a link that is not honoured, whatever
// the reason: altered, another deployment's, a subscriber unknown or
// erased. In English: a subscriber's language would tell that they exist.
func (p *Page) notFound(w http.ResponseWriter) {
	render(w, http.StatusNotFound, view{texts: textsFor(""), Invalid: true})
}

func (p *Page) failed(ctx context.Context, w http.ResponseWriter, t texts, err error) {
	p.cfg.Logger.ErrorContext(ctx, "preference page unavailable", "error", err)
	render(w, http.StatusServiceUnavailable, view{texts: t, Failed: true, Unavailable: true})
}

// setHeaders keep the page out of caches, indexes, frames and referrers
// (its URL is the subscriber's key), and let it load nothing but its own
// style and post nowhere but to itself.
func setHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Robots-Tag", "noindex, nofollow")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", csp)
}

type view struct {
	texts
	Tenant                              string
	Channels                            []string
	Rows                                []row
	Problem                             string
	Invalid, Saved, Failed, Unavailable bool
}

type row struct {
	Category string
	Required bool
	Boxes    []box
}

type box struct {
	Name, Label  string
	On, Required bool
}

func render(w http.ResponseWriter, status int, v view) {
	var buf bytes.Buffer
	if err := page.Execute(&buf, v); err != nil {
		http.Error(w, "the page could not be shown", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// style is the page's only style; the CSP admits it by its hash, and
// nothing else.
const style = `body{font-family:-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#222}` +
	`h1{font-size:1.4rem}table{border-collapse:collapse;width:100%;margin:1rem 0}th,td{padding:.5rem;border-bottom:1px solid #ddd;text-align:center}` +
	`th:first-child,td:first-child{text-align:left}.note{color:#5f6b7a;font-size:.9rem}.saved{color:#1a7f37}.problem{color:#b42318}` +
	`button{font-size:1rem;padding:.6rem 1.2rem}input{width:1.2rem;height:1.2rem}`

var csp = "default-src 'none'; style-src 'sha256-" + hash(style) + "'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// page is the one page, in plain HTML and a form that works without
// JavaScript; html/template escapes everything it shows.
var page = template.Must(template.New("preferences").Funcs(template.FuncMap{
	"intro": func(format, tenant string) string { return fmt.Sprintf(format, tenant) },
}).Parse(`<!doctype html>
<html lang="{{.Lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>{{if .Invalid}}{{.NotFound}}{{else}}{{.Title}}{{end}}</title>
<style>` + style + `</style></head>
<body>
{{- if .Invalid}}
<h1>{{.NotFound}}</h1>
<p>{{.NotFoundDetail}}</p>
{{- else if .Unavailable}}
<h1>{{.Title}}</h1>
<p class="problem">{{.FailedNote}}</p>
{{- else}}
<h1>{{.Title}}</h1>
<p>{{intro .Intro .Tenant}}</p>
{{- if .Saved}}
<p class="saved" role="status">{{.SavedNote}}</p>
{{- else if .Problem}}
<p class="problem" role="alert">{{.Problem}}</p>
{{- else if .Failed}}
<p class="problem" role="alert">{{.FailedNote}}</p>
{{- end}}
<form method="post">
<table>
<tr><th>{{.Category}}</th>{{range .Channels}}<th>{{.}}</th>{{end}}</tr>
{{- range .Rows}}
<tr><td>{{.Category}}{{if .Required}} <span class="note">({{$.Required}})</span>{{end}}</td>
{{- range .Boxes}}
<td>{{if .Required}}<input type="checkbox" checked disabled aria-label="{{.Label}}">
{{- else}}<input type="hidden" name="{{.Name}}" value="off"><input type="checkbox" name="{{.Name}}" value="on" aria-label="{{.Label}}"{{if .On}} checked{{end}}>{{end}}</td>
{{- end}}</tr>
{{- end}}
</table>
<button type="submit">{{.Save}}</button>
</form>
<p class="note">{{.RequiredNote}}</p>
{{- end}}
</body></html>
`))
