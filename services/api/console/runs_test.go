package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/services/workflow"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// reminderRoute is issue 34's purchase order workflow, short: send, wait
// for the confirmation a day at most, remind.
var reminderRoute = router.Route{Event: "order.created", Steps: []router.Step{
	{Send: &router.SendStep{Channels: []event.Channel{event.ChannelEmail}}},
	{Wait: &router.WaitStep{For: router.Duration(24 * time.Hour), UntilEvent: "order.confirmed"}},
	{Send: &router.SendStep{Channels: []event.Channel{event.ChannelWhatsApp}, Template: "po_reminder"}},
}}

// aRun is a run of reminderRoute for tenant's order, waiting at its
// second step since created, as the workflow service writes one.
func aRun(n int, tenant, order, subscriber string, created time.Time) workflow.Run {
	ev := fmt.Sprintf(`{"specversion":"1.0","id":"evt-%d","source":"erp","type":"order.created","tenant":%q,"data":{"order":{"id":%q}}}`,
		n, tenant, order)
	return workflow.Run{ID: fmt.Sprintf("run_%032x", n), Tenant: tenant, Subject: order, Event: json.RawMessage(ev),
		Route: reminderRoute, Recipient: event.Recipient{Role: "supplier", Subscriber: subscriber, Email: "olga@zarya.example"},
		Step: 1, State: workflow.Waiting, Until: created.Add(24 * time.Hour),
		Timeline: []workflow.Entry{{At: created, What: "started"}, {At: created, What: "sent", Detail: "email ntf_1"},
			{At: created, Step: 1, What: "waiting", Detail: "until " + created.Add(24*time.Hour).Format(time.RFC3339) + " or order.confirmed"}},
		Created: created, Updated: created}
}

// putRuns writes runs as the workflow service keeps them.
func (b *testBundle) putRuns(t *testing.T, runs ...workflow.Run) {
	t.Helper()
	ctx := heraldtest.Context(t)
	kv, err := b.nats.JS.KeyValue(ctx, workflow.Bucket)
	require.NoError(t, err)
	for _, r := range runs {
		body, err := json.Marshal(r)
		require.NoError(t, err)
		_, err = kv.Put(ctx, workflow.Key(r.Tenant, r.Subject, r.ID), body)
		require.NoError(t, err)
	}
}

var runLink = regexp.MustCompile(`<a href="/console/runs/(run_[0-9a-f]{32})\?tenant=([^"]+)">`)

// listed are the runs a Runs page lists, in its order.
func listed(t *testing.T, p page) []string {
	t.Helper()
	require.Equal(t, http.StatusOK, p.status, p.body)
	var ids []string
	for _, m := range runLink.FindAllStringSubmatch(p.body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// The Runs page lists one tenant's runs, newest first, by order,
// subscriber and state as GET /v1/runs filters them — never another
// tenant's, whatever the tenant field holds — and shows what tenants
// wrote as text.
func TestTheRunsPageListsATenantsRunsByOrderSubscriberAndState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().UTC().Truncate(time.Second)
	old, mid, hostile := aRun(1, "acme", "PO-1", "sub_zarya", now.Add(-3*time.Hour)), aRun(2, "acme", "PO-2", "sub_volga", now.Add(-2*time.Hour)),
		aRun(3, "acme", `PO-<script>alert(1)</script>`, "sub_zarya", now.Add(-time.Hour))
	mid.State, mid.Until = workflow.Done, time.Time{}
	b.putRuns(t, old, mid, hostile, aRun(4, "globex", "PO-1", "sub_zarya", now))
	br := browse(t, b.url)
	br.signIn(t, b.admin)

	p := br.get(t, "/console/runs?tenant=acme")
	require.Equal(t, []string{hostile.ID, mid.ID, old.ID}, listed(t, p), "acme's, newest first")
	require.Contains(t, p.body, `<a href="/console/runs" aria-current="page">Runs</a>`)
	require.NotContains(t, p.body, "<script>alert(1)</script>")
	require.Contains(t, p.body, "PO-&lt;script&gt;alert(1)&lt;/script&gt;")
	require.Contains(t, oneLine(p.body), "<td>2: wait 24h or order.confirmed</td>", "the current step, numbered from 1")
	require.Contains(t, p.body, `href="/console/notifications?order=PO-1&amp;tenant=acme"`, "the order's notifications")

	require.Equal(t, []string{old.ID}, listed(t, br.get(t, "/console/runs?tenant=acme&order=PO-1")))
	require.Equal(t, []string{hostile.ID, old.ID}, listed(t, br.get(t, "/console/runs?tenant=acme&subscriber=sub_zarya")))
	require.Equal(t, []string{mid.ID}, listed(t, br.get(t, "/console/runs?tenant=acme&state=done")))
	require.Empty(t, listed(t, br.get(t, "/console/runs?tenant=acme&order=PO-1&state=done")))

	for _, bad := range []string{"tenant=*", "tenant=acme.>", "tenant=acme&state=asleep", "tenant=acme&order=PO%0A1", "state=done"} {
		p = br.get(t, "/console/runs?"+bad)
		require.Equal(t, http.StatusBadRequest, p.status, bad)
		require.Empty(t, listed(t, page{status: http.StatusOK, body: p.body}), "%s lists nothing", bad)
	}
}

// A tenant with more runs than a page has them on pages, each once.
func TestTheRunsPagePages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().UTC()
	var runs []workflow.Run
	for i := range 60 {
		runs = append(runs, aRun(i+1, "acme", fmt.Sprintf("PO-%02d", i), "sub_zarya", now.Add(time.Duration(i)*time.Minute)))
	}
	b.putRuns(t, runs...)
	br := browse(t, b.url)
	br.signIn(t, b.admin)

	first := br.get(t, "/console/runs?tenant=acme&subscriber=sub_zarya")
	ids := listed(t, first)
	require.Len(t, ids, 50)
	require.NotContains(t, first.body, "First page")
	next := regexp.MustCompile(`<a href="([^"]+)" rel="next">`).FindStringSubmatch(first.body)
	require.NotNil(t, next, "a next page")
	second := br.get(t, strings.ReplaceAll(next[1], "&amp;", "&"))
	more := listed(t, second)
	require.Len(t, more, 10)
	require.NotContains(t, second.body, `rel="next"`)
	require.Contains(t, second.body, `<a href="/console/runs?subscriber=sub_zarya&amp;tenant=acme">First page</a>`)
	all := map[string]bool{}
	for _, id := range append(ids, more...) {
		all[id] = true
	}
	require.Len(t, all, 60, "every run once")
}

// A run's page: its route's steps numbered, the current one marked, its
// timeline, the event that started it, and Cancel while it can be.
func TestARunsPageShowsItsStepsTimelineAndEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().UTC().Truncate(time.Second)
	waiting, done := aRun(1, "acme", "PO-1", "sub_zarya", now), aRun(2, "acme", "PO-1", "sub_volga", now)
	done.State, done.Step, done.Until = workflow.Done, 1, time.Time{}
	done.Timeline = append(done.Timeline, workflow.Entry{At: now.Add(time.Hour), Step: 1, What: "ended", Detail: `by order.confirmed evt-<b>7</b>`})
	b.putRuns(t, waiting, done)
	br := browse(t, b.url)
	br.signIn(t, b.admin)

	p := br.get(t, "/console/runs/"+waiting.ID+"?tenant=acme")
	require.Equal(t, http.StatusOK, p.status, p.body)
	body := oneLine(p.body)
	require.Contains(t, body, `<li>send: send email</li> <li><strong>wait: wait 24h or order.confirmed (now)</strong></li> <li>send: send whatsapp (po_reminder)</li>`)
	require.Contains(t, body, "<dt>For</dt><dd>sub_zarya (supplier) olga@zarya.example</dd>")
	require.Contains(t, body, "<strong>waiting</strong>, waiting until "+now.Add(24*time.Hour).Format("2006-01-02 15:04:05 UTC"))
	require.Contains(t, body, `<td class="num">2</td> <td>waiting</td> <td class="reason">until `)
	require.Contains(t, body, "order.created <code>evt-1</code> from erp")
	require.Contains(t, p.body, `&#34;specversion&#34;: &#34;1.0&#34;`, "the event, indented")
	require.Contains(t, p.body, `action="/console/runs/`+waiting.ID+`/cancel"`)

	p = br.get(t, "/console/runs/"+done.ID+"?tenant=acme")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.NotContains(t, p.body, "/cancel", "an ended run offers no cancel")
	require.NotContains(t, p.body, "(now)")
	require.Contains(t, p.body, "by order.confirmed evt-&lt;b&gt;7&lt;/b&gt;")
}

// Cancel on a run's page ends it, with the session's CSRF token only; the
// page then shows it cancelled, by whom, and the audit log has it.
func TestCancellingARunFromItsPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := aRun(1, "acme", "PO-1", "sub_zarya", time.Now().UTC())
	b.putRuns(t, run)
	br := browse(t, b.url)
	csrf := br.signIn(t, b.admin)
	path := "/console/runs/" + run.ID

	for _, forged := range []url.Values{{"tenant": {"acme"}}, {"tenant": {"acme"}, "csrf": {csrf + "x"}}} {
		p := br.post(t, path+"/cancel", forged)
		require.Equal(t, http.StatusForbidden, p.status, p.body)
	}
	p := br.post(t, path+"/cancel", url.Values{"tenant": {"acme"}, "csrf": {csrf}}, "Origin", "https://evil.example")
	require.Equal(t, http.StatusForbidden, p.status, "from another site")
	require.Contains(t, br.get(t, path+"?tenant=acme").body, "<strong>waiting</strong>", "nothing forged cancelled it")

	p = br.post(t, path+"/cancel", url.Values{"tenant": {"acme"}, "csrf": {csrf}})
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.True(t, strings.HasPrefix(p.path, path+"?tenant=acme&done="), p.path)
	require.Contains(t, p.body, "Cancelled: nothing more is sent.")
	require.Contains(t, p.body, "<strong>cancelled</strong>")
	require.Contains(t, p.body, "by the console (key "+b.adminID+")")
	require.NotContains(t, p.body, "/cancel", "nothing left to cancel")
	entries, _ := b.audit(t)
	_, ok := findAudit(entries, "run.cancel", "acme/"+run.ID)
	require.True(t, ok, "the audit log has it: %v", actions(entries))

	p = br.post(t, path+"/cancel", url.Values{"tenant": {"acme"}, "csrf": {csrf}})
	require.Contains(t, p.body, "Not cancelled: the run has ended (cancelled).")
}

// A run of another tenant answers as no run at all does — looked at or
// cancelled, whatever the tenant field holds — and stays as it was.
func TestARunOfAnotherTenantIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	theirs := aRun(1, "globex", "PO-1", "sub_zarya", time.Now().UTC())
	b.putRuns(t, theirs)
	br := browse(t, b.url)
	csrf := br.signIn(t, b.admin)

	none := br.get(t, "/console/runs/run_ffffffffffffffffffffffffffffffff?tenant=acme")
	require.Equal(t, http.StatusNotFound, none.status)
	for _, path := range []string{"/console/runs/" + theirs.ID + "?tenant=acme", "/console/runs/" + theirs.ID + "?tenant=*",
		"/console/runs/" + theirs.ID, "/console/runs/not-a-run?tenant=globex"} {
		p := br.get(t, path)
		require.Equal(t, http.StatusNotFound, p.status, path)
		require.Equal(t, none.body, p.body, "%s answers as no run does", path)
	}
	for _, tenant := range []string{"acme", "*", ""} {
		p := br.post(t, "/console/runs/"+theirs.ID+"/cancel", url.Values{"tenant": {tenant}, "csrf": {csrf}})
		require.Equal(t, http.StatusNotFound, p.status, "cancelled as %q", tenant)
		require.Equal(t, none.body, p.body)
	}
	p := br.get(t, "/console/runs/"+theirs.ID+"?tenant=globex")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "<strong>waiting</strong>", "still waiting")
}

// An observer sees a run without the means to cancel it.
func TestAnObserverSeesARunWithoutCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := aRun(1, "acme", "PO-1", "sub_zarya", time.Now().UTC())
	b.putRuns(t, run)
	observer, _, err := b.keys.Create(heraldtest.Context(t), apikey.Spec{Observer: true, Name: "support"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the authenticator's watch brings the new key
		return stepwise(t, b.url).post(t, "/console/signin", url.Values{"key": {observer}}).status == http.StatusSeeOther
	}, 10*time.Second, 20*time.Millisecond)
	br := browse(t, b.url)
	br.signIn(t, observer)
	p := br.get(t, "/console/runs/"+run.ID+"?tenant=acme")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.NotContains(t, p.body, "/cancel")
}
