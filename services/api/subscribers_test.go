package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/recipient"
)

const olgaBody = `{"name":"Olga","email":" Olga@Zarya.example","phone":"+79161234567","whatsapp":"+79161234567",
	"locale":"ru","timezone":"Europe/Moscow","data":{"desk":4,"team":{"lead":"ivan","floor":2}}}`

// subscriberPath is the path of a subscriber's id, escaped as a client
// escapes it.
func subscriberPath(id string) string { return "/v1/subscribers/" + url.PathEscape(id) }

// A subscriber's id is opaque: whatever printable text it is — a dot, a
// space, a wildcard, Cyrillic — it is stored, read back and kept apart
// from every other, and another tenant does not find it.
func TestASubscriberIsStoredUnderAnyPrintableID(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	for _, id := range []string{"u.olga", "a b", "Ольга", "*", ">", "acme.u", "x/y"} {
		put := b.sendJSON(t, http.MethodPut, subscriberPath(id), acmeSend, strings.Replace(olgaBody, "Olga\"", id+"\"", 1))
		require.Equal(t, http.StatusCreated, put.status, "%s: %s", id, put.body)
	}
	for _, id := range []string{"u.olga", "a b", "Ольга", "*", ">", "acme.u", "x/y"} {
		got := b.do(t, http.MethodGet, subscriberPath(id), acmeRead, nil)
		require.Equal(t, http.StatusOK, got.status, "%s: %s", id, got.body)
		var s api.Subscriber
		require.NoError(t, json.Unmarshal([]byte(got.body), &s))
		require.Equal(t, id, s.ID)
		require.Equal(t, id, s.Name, "its own record, no other's")
		require.Equal(t, "olga@zarya.example", s.Email, "kept as matched: trimmed, lowercased")
		require.JSONEq(t, `{"desk":4,"team":{"lead":"ivan","floor":2}}`, string(s.Data))
		require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, subscriberPath(id), globexRead, nil).status, "acme's, not globex's")
	}
	missing := b.do(t, http.MethodGet, subscriberPath("u.ghost"), acmeRead, nil)
	require.Equal(t, http.StatusNotFound, missing.status)
	require.Contains(t, missing.body, `tenant acme has no subscriber \"u.ghost\"`)
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, subscriberPath("u.olga")+"?tenant=acme", adminKey, nil).status)
	require.Equal(t, http.StatusForbidden, b.sendJSON(t, http.MethodPut, subscriberPath("u.olga"), acmeRead, olgaBody).status,
		"writing needs the send scope")
}

// A PATCH is a JSON merge patch: present replaces, null clears, data is
// merged key by key; what it leaves out stays.
func TestAPatchMergesIntoTheSubscriber(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, subscriberPath("u-olga"), acmeSend, olgaBody).status)
	patched := b.send(t, http.MethodPatch, subscriberPath("u-olga"), acmeSend, "application/merge-patch+json",
		`{"email":"olga@new.example","phone":null,"data":{"team":{"floor":null,"room":"7b"},"desk":null,"badge":12345678901234567890}}`)
	require.Equal(t, http.StatusOK, patched.status, patched.body)
	var s api.Subscriber
	require.NoError(t, json.Unmarshal([]byte(b.do(t, http.MethodGet, subscriberPath("u-olga"), acmeRead, nil).body), &s))
	require.Equal(t, "olga@new.example", s.Email)
	require.Empty(t, s.Phone, "null clears")
	require.Equal(t, "+79161234567", s.WhatsApp, "absent stays")
	require.Equal(t, "Europe/Moscow", s.Timezone)
	require.JSONEq(t, `{"badge":12345678901234567890,"team":{"lead":"ivan","room":"7b"}}`, string(s.Data), "merged, numbers kept as sent")
	require.Contains(t, string(s.Data), "12345678901234567890")

	for body, says := range map[string]string{
		`{"timezone":"Mars/Olympus"}`: "timezone: ",
		`{"tenant":"globex"}`:         `unknown field \"tenant\"`,
		`["email"]`:                   "a merge patch is a JSON object",
		`{"email":"x\u0000@y.z"}`:     "email: ",
	} {
		refused := b.send(t, http.MethodPatch, subscriberPath("u-olga"), acmeSend, "application/merge-patch+json", body)
		require.Equal(t, http.StatusUnprocessableEntity, refused.status, "%s: %s", body, refused.body)
		require.Contains(t, refused.body, says, body)
	}
	require.Equal(t, http.StatusNotFound, b.send(t, http.MethodPatch, subscriberPath("u-ghost"), acmeSend, "application/json", `{"name":"x"}`).status)
	var after api.Subscriber
	require.NoError(t, json.Unmarshal([]byte(b.do(t, http.MethodGet, subscriberPath("u-olga"), acmeRead, nil).body), &after))
	require.Equal(t, s, after, "nothing written by a refused patch")
}

// Patches at once each change one field of the same subscriber: every
// change holds, for each is written at the revision it read.
func TestPatchesAtOnceLoseNoChange(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, subscriberPath("u-olga"), acmeSend, `{"name":"Olga"}`).status)
	const n = 8
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Go(func() {
			statuses[i] = b.send(t, http.MethodPatch, subscriberPath("u-olga"), acmeSend, "application/merge-patch+json",
				fmt.Sprintf(`{"data":{"k%d":%d}}`, i, i)).status
		})
	}
	wg.Wait()
	var s api.Subscriber
	require.NoError(t, json.Unmarshal([]byte(b.do(t, http.MethodGet, subscriberPath("u-olga"), acmeRead, nil).body), &s))
	var data map[string]int
	require.NoError(t, json.Unmarshal(s.Data, &data))
	for i, status := range statuses {
		if status == http.StatusOK {
			require.Equal(t, i, data[fmt.Sprintf("k%d", i)], "an answered patch holds: %v", data)
		} else {
			require.Equal(t, http.StatusConflict, status, "refused only as a conflict, to send again")
		}
	}
	require.Equal(t, n, len(data)+countOf(statuses, http.StatusConflict), "%v %v", data, statuses)
}

func countOf(statuses []int, status int) int {
	n := 0
	for _, s := range statuses {
		if s == status {
			n++
		}
	}
	return n
}

// An import stores each line on its own and says line by line what became
// of it; one over the bound is refused whole, nothing written.
func TestAnImportAnswersLineByLine(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, subscriberPath("u-olga"), acmeSend, olgaBody).status)
	body := `{"id":"u-olga","name":"Olga P.","email":"olga@zarya.example"}
{"id":"u.ivan","email":"ivan@zarya.example","timezone":"Europe/Madrid"}

{"id":"u-bad","timezone":"Mars/Olympus"}
not json
{"id":"u-x","colour":"red"}
{"id":"u-ana","locale":"es-MX"}
`
	got := b.send(t, http.MethodPost, "/v1/subscribers:import", acmeSend, "application/x-ndjson", body)
	require.Equal(t, http.StatusOK, got.status, got.body)
	var rep recipient.ImportReport
	require.NoError(t, json.Unmarshal([]byte(got.body), &rep))
	require.Equal(t, 1, rep.Updated)
	require.Equal(t, 2, rep.Created)
	require.Equal(t, 3, rep.Refused)
	require.Len(t, rep.Lines, 6, "one a non-empty line")
	want := []struct {
		line           int
		id, outcome, s string
	}{{1, "u-olga", "updated", ""}, {2, "u.ivan", "created", ""}, {4, "u-bad", "refused", "timezone: "},
		{5, "", "refused", "not a subscriber as JSON"}, {6, "", "refused", `unknown field "colour"`}, {7, "u-ana", "created", ""}}
	for i, w := range want {
		l := rep.Lines[i]
		require.Equal(t, w.line, l.Line)
		require.Equal(t, w.id, l.ID)
		require.Equal(t, w.outcome, l.Outcome, l.Error)
		require.Contains(t, l.Error, w.s)
	}
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, subscriberPath("u.ivan"), acmeRead, nil).status)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, subscriberPath("u-bad"), acmeRead, nil).status)

	var many strings.Builder
	for i := range 10_001 {
		fmt.Fprintf(&many, "{\"id\":\"m%d\"}\n", i)
	}
	over := b.send(t, http.MethodPost, "/v1/subscribers:import", acmeSend, "application/x-ndjson", many.String())
	require.Equal(t, http.StatusRequestEntityTooLarge, over.status, over.body)
	require.Contains(t, over.body, "more than 10000 subscribers in one import (this has 10001); nothing was written")
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, subscriberPath("m0"), acmeRead, nil).status, "nothing written")
}

// The subscriber an API write stores is the record the directory reads:
// the same store, the same keys, for the router and the erasure alike.
func TestAPutSubscriberIsTheDirectorysRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, subscriberPath("u.olga"), acmeSend, olgaBody).status)
	dir, err := recipient.Open(heraldtest.Context(t), b.nats.JS)
	require.NoError(t, err)
	s, _, err := dir.Subscribers.Get(heraldtest.Context(t), recipient.SubscriberKey("acme", "u.olga"))
	require.NoError(t, err)
	require.Equal(t, "ru", s.Locale)
	trail, err := dir.Subscribers.Changes(heraldtest.Context(t), recipient.SubscriberKey("acme", "u.olga"))
	require.NoError(t, err)
	require.Equal(t, "key:acme1", trail[len(trail)-1].Actor, "the audit trail names the key")
}

// send sends body as contentType.
func (b *bundle) send(t *testing.T, method, path, key, contentType, body string) answer {
	t.Helper()
	return b.do(t, method, path, key, []byte(body), "Content-Type", contentType)
}

// An import may be larger than other requests' bodies (api.max_body_bytes,
// 1 MiB by default): its own bound, 16 MiB, is what holds it.
func TestAnImportTakesMoreThanOtherBodies(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	var body strings.Builder
	for body.Len() <= 2<<20 {
		fmt.Fprintf(&body, "{\"id\":\"u%d\",\"colour\":\"%s\"}\n", body.Len(), strings.Repeat("r", 200))
	}
	got := b.send(t, http.MethodPost, "/v1/subscribers:import", acmeSend, "application/x-ndjson", body.String())
	require.Equal(t, http.StatusOK, got.status, got.body[:min(len(got.body), 300)])
	var rep recipient.ImportReport
	require.NoError(t, json.Unmarshal([]byte(got.body), &rep))
	require.Equal(t, strings.Count(body.String(), "\n"), rep.Refused, "every line read, each refused for its unknown field")
	tooBig := b.send(t, http.MethodPost, "/v1/subscribers:import", acmeSend, "application/x-ndjson", strings.Repeat(body.String(), 9))
	require.Equal(t, http.StatusRequestEntityTooLarge, tooBig.status)
	require.Contains(t, tooBig.body, "the body is larger than 16777216 bytes on this route")
}
