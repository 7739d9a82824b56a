package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// spoiled is the sample order with each edit applied once.
func spoiled(t *testing.T, edits ...[2]string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../examples/events/order.created.json")
	require.NoError(t, err)
	s := string(b)
	for _, e := range edits {
		require.Equal(t, 1, strings.Count(s, e[0]), e[0])
		s = strings.Replace(s, e[0], e[1], 1)
	}
	return []byte(s)
}

var (
	numberForDecimal = [2]string{`"net": "166.80"`, `"net": 166.80`}
	keyInAnotherCase = [2]string{`"email": "compras@frutasdelsur.example"`, `"email": "compras@frutasdelsur.example", "Email": "ceo@frutasdelsur.example"`}
	lowerCaseISOCode = [2]string{`"currency": "EUR"`, `"currency": "eur"`}
)

// What the router would dead-letter, herald publish refuses, with the
// reason the router gives it — every field at fault.
func TestPublishRefusesWhatTheRouterDeadLettersInItsWords(t *testing.T) {
	n := heraldtest.StartNATSWithStreams(t)
	t.Setenv("NATS_URL", n.Server.URL())
	t.Setenv("HERALD_CONFIG", "")
	r, err := router.New(n.JS, router.Config{Channels: event.Channels})
	require.NoError(t, err)
	require.NoError(t, r.Start(heraldtest.Context(t)))
	t.Cleanup(func() { require.NoError(t, r.Stop(heraldtest.Context(t))) })

	for i, payload := range [][]byte{
		spoiled(t, numberForDecimal),
		spoiled(t, keyInAnotherCase),
		spoiled(t, numberForDecimal, keyInAnotherCase, lowerCaseISOCode),
	} {
		path := filepath.Join(t.TempDir(), "event.json")
		payload = []byte(strings.Replace(string(payload), "evt-2026-11-30-0001", fmt.Sprintf("evt-spoiled-%d", i), 1))
		require.NoError(t, os.WriteFile(path, payload, 0o600))
		_, refused := herald(t, "publish", path)
		require.Error(t, refused, "input %d", i)

		_, err := herald(t, "publish", "--no-validate", "--subject", "orders.created", path)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(heraldtest.StreamMessages(t, n.JS, "DLQ")) == i+1 }, 10*time.Second, 20*time.Millisecond)
		reason := heraldtest.StreamMessages(t, n.JS, "DLQ")[i].Header.Get(deadletter.HeaderReason)
		require.Equal(t, path+": "+reason+" (use --no-validate to publish it anyway)", refused.Error(), "input %d", i)
	}
	reason := heraldtest.StreamMessages(t, n.JS, "DLQ")[2].Header.Get(deadletter.HeaderReason)
	for _, field := range []string{"data.order.totals.net: ", "data.recipients[1].Email: ", "data.order.currency: "} {
		require.Contains(t, reason, field, "a dead letter names every field at fault")
	}
}
