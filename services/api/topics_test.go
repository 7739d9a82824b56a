package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/api"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/recipient"
)

func topicPath(id string) string { return "/v1/topics/" + url.PathEscape(id) }

// topicMembers are the subscribers of a topic, read a page of limit at a
// time.
func (b *bundle) topicMembers(t *testing.T, topic string, limit int) []string {
	t.Helper()
	var out []string
	cursor := ""
	for {
		got := b.do(t, http.MethodGet, fmt.Sprintf("%s/subscribers?limit=%d&cursor=%s", topicPath(topic), limit, url.QueryEscape(cursor)), acmeRead, nil)
		require.Equal(t, http.StatusOK, got.status, got.body)
		var page struct {
			Subscribers []api.TopicMember
			NextCursor  string `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal([]byte(got.body), &page))
		for _, m := range page.Subscribers {
			out = append(out, m.Subscriber)
		}
		if cursor = page.NextCursor; cursor == "" {
			return out
		}
	}
}

// A topic's members are added and removed by id, each added one a
// subscriber (else nothing is written), listed a page at a time; removing
// the topic removes its memberships, and its subscribers stay.
func TestATopicsSubscribersAreAddedListedAndRemoved(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	b.putSubscribers(t, "u-olga", "u.ivan", "Ана", "u-4", "u-5")
	require.Equal(t, http.StatusNotFound, b.sendJSON(t, http.MethodPost, topicPath("wh.sevilla")+"/subscribers", acmeSend, `{"add":["u-olga"]}`).status,
		"no topic yet")
	require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, topicPath("wh.sevilla"), acmeSend, `{"name":"Sevilla"}`).status)
	require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, topicPath("wh.sevilla.night"), acmeSend, `{}`).status)

	ghost := b.sendJSON(t, http.MethodPost, topicPath("wh.sevilla")+"/subscribers", acmeSend, `{"add":["u-olga","u-ghost"]}`)
	require.Equal(t, http.StatusUnprocessableEntity, ghost.status)
	require.Contains(t, ghost.body, `add[1]: \"u-ghost\" is not a subscriber`)
	require.Empty(t, b.topicMembers(t, "wh.sevilla", 10), "nothing written")

	added := b.sendJSON(t, http.MethodPost, topicPath("wh.sevilla")+"/subscribers", acmeSend, `{"add":["u-olga","u.ivan","Ана","u-4","u-5","u-olga"]}`)
	require.Equal(t, http.StatusOK, added.status, added.body)
	require.JSONEq(t, `{"tenant":"acme","topic":"wh.sevilla","added":5,"removed":0,"members":5}`, added.body)
	night := b.sendJSON(t, http.MethodPost, topicPath("wh.sevilla.night")+"/subscribers", acmeSend, `{"add":["u-5"]}`)
	require.Equal(t, http.StatusOK, night.status, night.body)
	require.ElementsMatch(t, []string{"u-olga", "u.ivan", "Ана", "u-4", "u-5"}, b.topicMembers(t, "wh.sevilla", 2),
		"every member once across pages, no other topic's")

	changed := b.sendJSON(t, http.MethodPost, topicPath("wh.sevilla")+"/subscribers", acmeSend, `{"add":["u-olga"],"remove":["u-4","u-4","u-ghost"]}`)
	require.Equal(t, http.StatusOK, changed.status, changed.body)
	require.JSONEq(t, `{"tenant":"acme","topic":"wh.sevilla","added":0,"removed":1,"members":4}`, changed.body)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, topicPath("wh.sevilla")+"/subscribers", globexRead, nil).status)

	require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, topicPath("wh.sevilla"), acmeSend, nil).status)
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, topicPath("wh.sevilla")+"/subscribers", acmeRead, nil).status)
	dir, err := recipient.Open(heraldtest.Context(t), b.nats.JS)
	require.NoError(t, err)
	left, err := dir.Memberships.KeysUnder(heraldtest.Context(t), recipient.MembersPrefix("acme", "wh.sevilla"))
	require.NoError(t, err)
	require.Empty(t, left, "its memberships went with it")
	require.Equal(t, []string{"u-5"}, b.topicMembers(t, "wh.sevilla.night", 10), "another topic's stay")
	require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, subscriberPath("u-olga"), acmeRead, nil).status)

	var topics struct{ Topics []api.Topic }
	require.NoError(t, json.Unmarshal([]byte(b.do(t, http.MethodGet, "/v1/topics", acmeRead, nil).body), &topics))
	require.Len(t, topics.Topics, 1)
	require.Equal(t, "wh.sevilla.night", topics.Topics[0].ID)
}

// A change of more ids than a call takes — the first step of a
// million-member import — is refused naming the field, nothing written.
func TestATopicChangeIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{})
	b.putSubscribers(t, "u-olga")
	require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, topicPath("all"), acmeSend, `{}`).status)
	ids := make([]string, 10_001)
	for i := range ids {
		ids[i] = "u-olga"
	}
	body, err := json.Marshal(map[string][]string{"add": ids})
	require.NoError(t, err)
	over := b.sendJSON(t, http.MethodPost, topicPath("all")+"/subscribers", acmeSend, string(body))
	require.Equal(t, http.StatusUnprocessableEntity, over.status, over.body)
	require.Contains(t, over.body, "add: 10001 ids, more than 10000 a call")
	require.Empty(t, b.topicMembers(t, "all", 10))
	bad := b.sendJSON(t, http.MethodPost, topicPath("all")+"/subscribers", acmeSend, `{"remove":["u\u0007"]}`)
	require.Equal(t, http.StatusUnprocessableEntity, bad.status)
	require.True(t, strings.Contains(bad.body, "remove[0]: holds a character that is not printable"), bad.body)
}

// A topic holds at most MaxTopicMembers: an addition past it is refused
// whole, naming the bound; one that removes as many as it adds passes.
func TestATopicsSizeIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, api.Config{MaxTopicMembers: 3})
	b.putSubscribers(t, "u1", "u2", "u3", "u4")
	require.Equal(t, http.StatusCreated, b.sendJSON(t, http.MethodPut, topicPath("all"), acmeSend, `{}`).status)
	require.Equal(t, http.StatusOK, b.sendJSON(t, http.MethodPost, topicPath("all")+"/subscribers", acmeSend, `{"add":["u1","u2"]}`).status)
	over := b.sendJSON(t, http.MethodPost, topicPath("all")+"/subscribers", acmeSend, `{"add":["u3","u4"]}`)
	require.Equal(t, http.StatusUnprocessableEntity, over.status, over.body)
	require.Contains(t, over.body, "add: the topic would have 4 members, more than 3")
	require.ElementsMatch(t, []string{"u1", "u2"}, b.topicMembers(t, "all", 10), "nothing written")
	swap := b.sendJSON(t, http.MethodPost, topicPath("all")+"/subscribers", acmeSend, `{"add":["u3","u4"],"remove":["u1"]}`)
	require.Equal(t, http.StatusOK, swap.status, swap.body)
	require.ElementsMatch(t, []string{"u2", "u3", "u4"}, b.topicMembers(t, "all", 10))
}
