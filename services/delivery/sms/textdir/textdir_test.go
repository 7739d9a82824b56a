package textdir_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/sms/smstest"
	"github.com/heraldhq/herald/services/delivery/sms/textdir"
	"github.com/heraldhq/herald/shared/event"
)

// The development sink passes the suite but for what only a network
// provider can do: refuse a number, or be down.
func TestConformance(t *testing.T) {
	smstest.Run(t, func(t *testing.T) smstest.Harness {
		sink, err := textdir.New(t.TempDir())
		require.NoError(t, err)
		return smstest.Harness{
			Provider: sink,
			Received: func(t *testing.T) []smstest.Received {
				written, err := textdir.Read(sink.Dir())
				require.NoError(t, err)
				out := make([]smstest.Received, len(written))
				for i, w := range written {
					out[i] = smstest.Received{Channel: w.Channel, To: w.To, Body: w.Body, ContentSID: w.ContentSID, Variables: w.Variables}
					if w.ContentSID != "" {
						out[i].Body = ""
					}
				}
				return out
			},
			Channels: []event.Channel{event.ChannelSMS, event.ChannelWhatsApp},
		}
	})
}
