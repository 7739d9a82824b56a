package console_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api/console"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/history"
	"github.com/heraldhq/herald/shared/ledger"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/report"
)

// record writes an entry as a delivery worker does, and its row as
// the history service does; it returns the notification's id.
func (b *testBundle) record(t *testing.T, e ledger.Entry, created time.Time) string {
	t.Helper()
	ctx := heraldtest.Context(t)
	e.NotificationID = notification.ID(e.DedupeKey)
	reports := e.Reports
	e.Reports = nil
	require.NoError(t, b.ledger.Put(ctx, &e))
	if len(reports) > 0 { // told after the outcome, as providers do
		for _, r := range reports {
			e.Report(r)
		}
		require.NoError(t, b.ledger.Put(ctx, &e))
	}
	require.NoError(t, b.index.Apply(ctx, []history.Row{{Tenant: e.Tenant, ID: e.NotificationID, Order: e.Order,
		Document: e.Document, Channel: e.Channel, Recipient: e.Recipient, State: string(e.State), Reason: e.Reason,
		Provider: e.Provider, ProviderMessageID: e.ProviderMessageID, Tries: e.Tries, CreatedAt: created,
		UpdatedAt: e.UpdatedAt, Revision: 1}}))
	return e.NotificationID
}

// failedEntry is a notification delivery gave up on after three transient
// tries; it keeps its delivery message, so it can be resent.
func failedEntry(t *testing.T, tried time.Time) ledger.Entry {
	t.Helper()
	key := "acme:PO-1:1:purchase_order:email:olga@zarya.example"
	d := notification.Delivery{ID: notification.ID(key), DedupeKey: key, Tenant: "acme", Channel: event.ChannelEmail,
		Priority: notification.PriorityNormal, Recipient: notification.Recipient{Address: "olga@zarya.example"}, Template: "purchase_order",
		Document: &notification.Document{Type: "purchase_order", Object: "acme/PO-1/purchase_order-r1.pdf"}}
	body, err := json.Marshal(d)
	require.NoError(t, err)
	e := ledger.Entry{DedupeKey: key, Tenant: "acme", Channel: "email", State: ledger.Failed, Retryable: true,
		Reason: "gave up after 3 tries", Order: "PO-1", Document: "purchase_order", Recipient: "olga@zarya.example", Delivery: body}
	for i := range 3 {
		e.Record(ledger.Attempt{Time: tried.Add(time.Duration(i) * time.Minute), Delivery: uint64(i + 1), Error: "ses: 503 throttled"})
	}
	return e
}

// deliveredEntry went on its second try, then bounced.
func deliveredEntry(tried time.Time) ledger.Entry {
	e := ledger.Entry{DedupeKey: "acme:PO-2:2:purchase_order:email:ivan@zarya.example", Tenant: "acme", Channel: "email",
		State: ledger.Delivered, Provider: "ses", ProviderMessageID: "0100-abc", Order: "PO-2", Document: "purchase_order",
		Recipient: "ivan@zarya.example", Template: "purchase_order"}
	e.Record(ledger.Attempt{Time: tried, Delivery: 1, Error: "ses: connection reset"})
	e.Record(ledger.Attempt{Time: tried.Add(time.Minute), Delivery: 2, Provider: "ses"})
	e.Reports = []report.Report{{Provider: "ses", MessageID: "0100-abc", EventID: "ev-1", Kind: report.Bounced, Hard: true,
		Detail: "550 5.1.1 user unknown", Time: time.Now().Add(time.Second)}}
	return e
}

func TestSupportFindsANotificationByOrderRecipientOrTime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().UTC().Truncate(time.Minute)
	failed := b.record(t, failedEntry(t, now.Add(-110*time.Minute)), now.Add(-2*time.Hour))
	delivered := b.record(t, deliveredEntry(now.Add(-50*time.Minute)), now.Add(-time.Hour))
	globex := deliveredEntry(now)
	globex.Tenant, globex.Order, globex.DedupeKey = "globex", "PO-1", "globex:PO-1:1:purchase_order:email:olga@zarya.example"
	other := b.record(t, globex, now.Add(-2*time.Hour))
	br := browse(t, b.url)
	br.signIn(t, b.admin)

	for name, c := range map[string]struct {
		query       string
		want, avoid []string
	}{
		"by order":               {"tenant=acme&order=PO-1", []string{failed}, []string{delivered, other}},
		"by recipient, any case": {"tenant=acme&recipient=IVAN@Zarya.example", []string{delivered}, []string{failed, other}},
		"by state":               {"tenant=acme&state=failed", []string{failed}, []string{delivered, other}},
		"from a time":            {"tenant=acme&from=" + now.Add(-90*time.Minute).Format("2006-01-02T15:04"), []string{delivered}, []string{failed, other}},
		"to a time":              {"tenant=acme&to=" + now.Add(-90*time.Minute).Format("2006-01-02T15:04"), []string{failed}, []string{delivered, other}},
		"another tenant's order": {"tenant=globex&order=PO-1", []string{other}, []string{failed, delivered}},
		"all the tenant's":       {"tenant=acme", []string{failed, delivered}, []string{other}},
	} {
		p := br.get(t, "/console/notifications?"+c.query)
		require.Equal(t, http.StatusOK, p.status, "%s: %s", name, p.body)
		for _, id := range c.want {
			require.Contains(t, p.body, `href="/console/notifications/`+id+`?tenant=`, name)
		}
		for _, id := range c.avoid {
			require.NotContains(t, p.body, id, name)
		}
	}

	p := br.get(t, "/console/notifications?order=PO-1")
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "Name the tenant")
	p = br.get(t, "/console/notifications?tenant=acme&id="+delivered)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Equal(t, "/console/notifications/"+delivered+"?tenant=acme", p.path, "an id leads to its page")
}

func TestSearchPagesThroughTheIndexWithItsCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := time.Now().UTC().Add(-time.Hour)
	var rows []history.Row
	for i := range 51 {
		rows = append(rows, history.Row{Tenant: "acme", ID: fmt.Sprintf("ntf_%02d", i), Order: "PO-7", Channel: "email",
			Recipient: "olga@zarya.example", State: history.Pending, CreatedAt: base.Add(time.Duration(i) * time.Second)})
	}
	require.NoError(t, b.index.Accept(heraldtest.Context(t), rows))
	br := browse(t, b.url)
	br.signIn(t, b.admin)

	first := br.get(t, "/console/notifications?tenant=acme&order=PO-7")
	require.Equal(t, http.StatusOK, first.status, first.body)
	require.Contains(t, first.body, "ntf_50")
	require.Contains(t, first.body, "ntf_01")
	require.NotContains(t, first.body, "ntf_00")
	next := regexp.MustCompile(`<a href="([^"]+)" rel="next">`).FindStringSubmatch(first.body)
	require.NotNil(t, next, "a next page")
	second := br.get(t, html.UnescapeString(next[1]))
	require.Equal(t, http.StatusOK, second.status, second.body)
	require.Contains(t, second.body, "ntf_00")
	require.NotContains(t, second.body, "ntf_01")
	require.NotContains(t, second.body, `rel="next"`)
	require.Contains(t, second.body, "First page")
}

func TestANotificationsPageShowsItsTimelineAndDocument(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	now := time.Now().UTC()
	id := b.record(t, deliveredEntry(now.Add(-50*time.Minute)), now.Add(-time.Hour))
	docs, err := documents.Open(ctx, b.nats.JS)
	require.NoError(t, err)
	_, err = docs.Put(ctx, "acme/PO-2/purchase_order-r2.pdf", "purchase_order", []byte("%PDF-1.7 the order"))
	require.NoError(t, err)
	br := browse(t, b.serve(t, console.Config{History: b.index, Links: b.signer}))
	br.signIn(t, b.admin)

	p := br.get(t, "/console/notifications/"+id+"?tenant=acme")
	require.Equal(t, http.StatusOK, p.status, p.body)
	timeline := p.body[strings.Index(p.body, "<h2>Timeline</h2>"):strings.Index(p.body, "<h2>Document</h2>")]
	var at []int
	for _, step := range []string{">Created<", ">Try 1<", "ses: connection reset", ">Try 2<", ">Delivered<", "Reported bounced (hard)"} {
		i := strings.Index(timeline, step)
		require.GreaterOrEqual(t, i, 0, "the timeline shows %q:\n%s", step, timeline)
		at = append(at, i)
	}
	require.IsIncreasing(t, at, "oldest first: created, each try, the outcome, then the provider's report")
	require.Contains(t, timeline, "<td>transient</td>", "the error class of the failed try")
	require.Contains(t, timeline, "550 5.1.1 user unknown")
	require.Contains(t, timeline, "accepted by the provider as 0100-abc")

	m := regexp.MustCompile(`<a href="(https://herald\.example/v1/documents/[^"]+)" download>`).FindStringSubmatch(p.body)
	require.NotNil(t, m, "a download link:\n%s", p.body)
	link, err := url.Parse(html.UnescapeString(m[1]))
	require.NoError(t, err)
	name := strings.TrimPrefix(link.Path, documents.LinkPath)
	require.Equal(t, "acme/PO-2/purchase_order-r2.pdf", name, "the revision the dedupe key names")
	require.NoError(t, b.signer.Verify(name, link.Query().Get("expires"), link.Query().Get("signature"), time.Now()),
		"signed as the emails' links are")

	unsigned := browse(t, b.url)
	unsigned.signIn(t, b.admin)
	p = unsigned.get(t, "/console/notifications/"+id+"?tenant=acme")
	require.NotContains(t, p.body, "/v1/documents/")
	require.Contains(t, p.body, "document links are not configured")

	p = br.get(t, "/console/notifications/"+id+"?tenant=globex")
	require.Equal(t, http.StatusNotFound, p.status, "another tenant's id is no notification of this tenant")
}

func TestRetryFromTheConsoleSendsAFailedNotificationBackAndIsAudited(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().UTC()
	id := b.record(t, failedEntry(t, now.Add(-10*time.Minute)), now.Add(-11*time.Minute))
	delivered := b.record(t, deliveredEntry(now.Add(-5*time.Minute)), now.Add(-6*time.Minute))
	br := browse(t, b.serve(t, console.Config{History: b.index, Retry: b.svc.Retry}))
	csrf := br.signIn(t, b.admin)

	page := br.get(t, "/console/notifications/"+id+"?tenant=acme")
	require.Contains(t, page.body, `action="/console/notifications/`+id+`/retry"`)
	require.Equal(t, 3, strings.Count(page.body, "ses: 503 throttled"), "every try")

	p := br.post(t, "/console/notifications/"+id+"/retry", url.Values{"tenant": {"acme"}})
	require.Equal(t, http.StatusForbidden, p.status, "without the session's CSRF token")
	require.Empty(t, heraldtest.StreamMessages(t, b.nats.JS, "NOTIFY"))

	p = br.post(t, "/console/notifications/"+id+"/retry", url.Values{"tenant": {"acme"}, "csrf": {csrf}})
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "Sent back to delivery")
	require.Contains(t, p.body, "<strong>retrying</strong>")
	sent := heraldtest.StreamMessages(t, b.nats.JS, "NOTIFY")
	require.Len(t, sent, 1)
	require.Equal(t, "notify.email.normal.acme", sent[0].Subject)
	e, err := b.ledger.ByID(heraldtest.Context(t), "acme", id)
	require.NoError(t, err)
	require.Equal(t, ledger.Retrying, e.State)
	require.Equal(t, 1, e.Resends)

	p = br.post(t, "/console/notifications/"+delivered+"/retry", url.Values{"tenant": {"acme"}, "csrf": {csrf}})
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "Not retried: notification "+delivered+" was delivered; it is not sent again.")
	require.Len(t, heraldtest.StreamMessages(t, b.nats.JS, "NOTIFY"), 1)

	entries, _ := b.audit(t)
	var retries []console.AuditEntry
	for _, a := range entries {
		if a.Action == "notification.retry" {
			retries = append(retries, a)
		}
	}
	require.Len(t, retries, 2, "the refused retry is audited too; the one without CSRF never ran")
	require.Equal(t, b.adminID, retries[0].Who)
	require.Equal(t, "acme/"+id, retries[0].Target)
	require.Empty(t, retries[0].Error)
	require.Equal(t, "acme/"+delivered, retries[1].Target)
	require.Contains(t, retries[1].Error, "was delivered")
}

func TestWithoutAnIndexANotificationIsStillFoundByItsID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().UTC()
	id := b.record(t, deliveredEntry(now.Add(-5*time.Minute)), now.Add(-6*time.Minute))
	br := browse(t, b.serve(t, console.Config{}))
	br.signIn(t, b.admin)

	p := br.get(t, "/console/notifications?tenant=acme&order=PO-2")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "There is no notification index in this deployment (<code>history.url</code> is not set)")
	require.NotContains(t, p.body, id)

	p = br.get(t, "/console/notifications?tenant=acme&id="+id)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "<strong>delivered</strong>")
	require.Contains(t, p.body, ">Try 2<")
	require.NotContains(t, p.body, ">Created<", "the creation time is the index's")
}

func TestWhatATenantWroteIsShownAsText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.index.Accept(heraldtest.Context(t), []history.Row{{Tenant: "acme", ID: "ntf_x", Order: `PO-"><script>alert(1)</script>`,
		Channel: "email", Recipient: "<img src=x onerror=alert(1)>@zarya.example", CreatedAt: time.Now()}}))
	br := browse(t, b.url)
	br.signIn(t, b.admin)

	p := br.get(t, "/console/notifications?tenant=acme&state=pending")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "ntf_x")
	require.NotContains(t, p.body, "<script>alert")
	require.NotContains(t, p.body, "<img src=x")
	require.Contains(t, p.body, "&lt;img src=x onerror=alert(1)&gt;@zarya.example")
}

func TestATenantKeyCannotSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	br := browse(t, b.url)

	p := br.post(t, "/console/signin", url.Values{"key": {b.tenant}, "next": {"/console/notifications"}})
	require.Equal(t, http.StatusForbidden, p.status, p.body)
	require.Contains(t, p.body, "The console is for operators")
	p = br.get(t, "/console/notifications?tenant=acme")
	require.Equal(t, "/console/signin?next=%2Fconsole%2Fnotifications%3Ftenant%3Dacme", p.path, "no session: back to sign in")
}

// A notification's page shows the workflow runs of its order beside its
// own timeline: each run's steps, waits and what ended them.
func TestANotificationsPageShowsItsOrdersRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := heraldtest.Context(t)
	now := time.Now().UTC()
	id := b.record(t, deliveredEntry(now.Add(-50*time.Minute)), now.Add(-time.Hour))
	kv, err := b.nats.JS.KeyValue(ctx, workflow.Bucket)
	require.NoError(t, err)
	run := workflow.Run{ID: "run_0123456789abcdef0123456789abcdef", Tenant: "acme", Subject: "PO-2", State: workflow.Done, Step: 1,
		Route:     router.Route{Steps: []router.Step{{Send: &router.SendStep{}}, {Wait: &router.WaitStep{UntilEvent: "order.confirmed"}}, {Send: &router.SendStep{}}}},
		Recipient: event.Recipient{Role: "supplier", Email: "olga@zarya.example"},
		Timeline: []workflow.Entry{{At: now.Add(-50 * time.Minute), What: "sent"},
			{At: now.Add(-49 * time.Minute), Step: 1, What: "waiting", Detail: "for order.confirmed"},
			{At: now.Add(-10 * time.Minute), Step: 1, What: "ended", Detail: "by order.confirmed evt-7"}}}
	body, err := json.Marshal(run)
	require.NoError(t, err)
	_, err = kv.Put(ctx, workflow.Key("acme", "PO-2", run.ID), body)
	require.NoError(t, err)
	br := browse(t, b.url)
	br.signIn(t, b.admin)

	p := br.get(t, "/console/notifications/"+id+"?tenant=acme")
	require.Equal(t, http.StatusOK, p.status, p.body)
	runs := p.body[strings.Index(p.body, "<h2>Workflow runs of this order</h2>"):]
	require.Contains(t, runs, `Run <a href="/console/runs/run_0123456789abcdef0123456789abcdef?tenant=acme">run_0123456789abcdef0123456789abcdef</a>: done, step 2 of 3, for olga@zarya.example`)
	require.Contains(t, runs, "Step 2: ended", "steps numbered from 1, as the run's page numbers them")
	require.Contains(t, runs, "by order.confirmed evt-7")
}
