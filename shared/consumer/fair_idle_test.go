package consumer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/consumer"
	"github.com/heraldhq/herald/shared/heraldtest"
)

// At a trickle — one message at a time, each handled before the next is
// published — the loop does no work for nothing: no worker is woken to
// an empty line, and no key is pulled again only to find it has none.
// Each of those was one per delivery: a worker taking a key woke the
// next idle one whether or not more was in line, and a key that had
// just handed over its last message went back in line for an empty pull.
func TestATrickleWakesNoWorkerAndPullsNothingInVain(t *testing.T) {
	t.Parallel()
	n := fairQueue(t, nil)
	h := &handled{}
	f, err := consumer.StartFair(heraldtest.Context(t), h.handle, consumer.FairConfig{
		Config: consumer.Config{JetStream: n.JS, Concurrency: 8}, Stream: "Q", Classes: []consumer.Class{class("low", 1)}})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, f.Stop(ctx))
	})
	const trickle = 100
	ctx := heraldtest.Context(t)
	for i := range trickle {
		_, err := n.JS.Publish(ctx, "q.low.a", []byte(fmt.Sprint(i)))
		require.NoError(t, err)
		h.wait(t, i+1)
	}
	h.once(t, map[string]int{"q.low.a": trickle})
	wakes, emptyPulls := f.Idle()
	require.LessOrEqual(t, emptyPulls, int64(trickle/10), "pulls that found nothing")
	require.LessOrEqual(t, wakes, int64(trickle/10), "workers woken to an empty line")
}
