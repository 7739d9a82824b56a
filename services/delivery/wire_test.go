package delivery_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email"
	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/sendgrid"
	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/services/delivery/email/smtp"
	"github.com/heraldhq/herald/services/delivery/email/smtp/smtptest"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/ledger"
)

// providerTimeout bounds each provider call in these tests: long enough for
// a loaded machine, shorter than the faults that must time out.
const providerTimeout = 2 * time.Second

// wire is a real provider and the fake at the far end of its wire.
type wire struct {
	name     string
	provider email.Provider
	received func() int // messages the fake accepted
}

// sesWire answers the first send with fault, and the rest normally.
func sesWire(fault sestest.Fault) func(t *testing.T) wire {
	return func(t *testing.T) wire {
		srv := sestest.New(t)
		srv.Faults(emailtest.FailFirst(1, fault))
		return wire{name: "ses", provider: sesProvider(t, srv.URL()), received: func() int { return len(srv.Received()) }}
	}
}

func sendgridWire(fault sendgridtest.Fault) func(t *testing.T) wire {
	return func(t *testing.T) wire {
		srv := sendgridtest.New(t, "SG.delivery-test")
		srv.Faults(emailtest.FailFirst(1, fault))
		p, err := sendgrid.New(sendgrid.Config{APIKey: "SG.delivery-test", Endpoint: srv.URL()})
		require.NoError(t, err)
		return wire{name: "sendgrid", provider: p, received: func() int { return len(srv.Received()) }}
	}
}

// smtpWire's server asks for password; the provider logs in with login.
func smtpWire(fault smtptest.Fault, login string) func(t *testing.T) wire {
	return func(t *testing.T) wire {
		srv := smtptest.New(t, smtptest.WithAuth("herald", "password"))
		srv.Faults(emailtest.FailFirst(1, fault))
		p, err := smtp.New(smtp.Config{Host: srv.Host(), Port: srv.Port(), TLS: smtp.TLSNone, HeloName: "herald.test",
			Username: "herald", Password: login})
		require.NoError(t, err)
		return wire{name: "smtp", provider: p, received: func() int { return len(srv.Received()) }}
	}
}

// What each provider's first answer makes of a delivery, with the real
// provider classifying what its fake answers on the wire: retried and
// delivered (tries 2), or refused for good — recorded as failed,
// dead-lettered with the provider's words, never retried (tries 1).
func TestProviderAnswersDecideTheOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		wire      func(t *testing.T) wire
		tries     int
		words     string // in the first try's error
		ambiguous bool   // the provider may have taken the first try
		sent      int    // messages the provider ends up with
	}{
		{name: "ses 500", wire: sesWire(sestest.ServerError), tries: 2, words: "ses: HTTP 500: InternalFailure", sent: 1},
		{name: "ses 429", wire: sesWire(sestest.Throttle(time.Second)), tries: 2, words: "HTTP 429: TooManyRequestsException", sent: 1},
		{name: "ses 400 invalid address", wire: sesWire(sestest.InvalidAddress), tries: 1, words: "HTTP 400: BadRequestException: Illegal address"},
		{name: "ses 401", wire: sesWire(sestest.Unauthorized), tries: 1, words: "authentication rejected: HTTP 401: UnrecognizedClientException"},
		{name: "ses 403", wire: sesWire(sestest.APIError(http.StatusForbidden, "AccessDeniedException", "not authorized to perform ses:SendEmail")),
			tries: 1, words: "authentication rejected: HTTP 403: AccessDeniedException"},
		// Taken without a receipt: the retry sends it again, which is why
		// such an answer is counted as ambiguous.
		{name: "ses 200 without a message id", wire: sesWire(sestest.NoMessageID), tries: 2, words: "without a MessageId", ambiguous: true, sent: 2},
		{name: "ses timeout", wire: sesWire(sestest.Timeout(time.Minute)), tries: 2, words: "deadline exceeded", ambiguous: true, sent: 1},

		{name: "sendgrid 500", wire: sendgridWire(sendgridtest.ServerError), tries: 2, words: "sendgrid: HTTP 500: An internal server error occurred.", sent: 1},
		{name: "sendgrid 429", wire: sendgridWire(sendgridtest.Throttle(time.Second)), tries: 2, words: "HTTP 429: too many requests", sent: 1},
		{name: "sendgrid 400 invalid address", wire: sendgridWire(sendgridtest.InvalidAddress), tries: 1, words: "HTTP 400: Does not contain a valid address."},
		{name: "sendgrid 401", wire: sendgridWire(sendgridtest.Unauthorized), tries: 1, words: "authentication rejected: HTTP 401"},
		{name: "sendgrid 202 without a message id", wire: sendgridWire(sendgridtest.NoMessageID), tries: 2, words: "without an X-Message-Id header",
			ambiguous: true, sent: 2},
		{name: "sendgrid timeout", wire: sendgridWire(sendgridtest.Timeout(time.Minute)), tries: 2, words: "deadline exceeded", ambiguous: true, sent: 1},

		{name: "smtp 451", wire: smtpWire(smtptest.TempFail, "password"), tries: 2, words: `deferred the message: closing SMTP DATA writer: 451 "4.3.0 try again later"`, sent: 1},
		{name: "smtp 550 unknown recipient", wire: smtpWire(smtptest.RejectRecipient, "password"), tries: 1, words: `refused the message: sending SMTP RCPT TO command: 550 "5.1.1 user unknown"`},
		{name: "smtp 535 wrong password", wire: smtpWire(smtptest.NoFault, "wrong"), tries: 1, words: `authentication rejected for user "herald"`},
		// The server commits the message after the client gave up on it.
		{name: "smtp timeout", wire: smtpWire(smtptest.Slow(2*providerTimeout), "password"), tries: 2, words: "deadline exceeded",
			ambiguous: true, sent: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, 1)
			require.NoError(t, b.svc.Stop(heraldtest.Context(t)))
			w := tt.wire(t)
			b.worker(t, b.nats.JS, func(c *config) {
				c.Providers, c.ProviderTimeout = []email.Named{{Name: w.name, Provider: w.provider}}, providerTimeout
			})
			b.publish(t, 1)

			if tt.tries == 1 {
				require.Eventually(t, func() bool { return len(b.dlq(t)) == 1 }, 60*time.Second, 20*time.Millisecond)
				require.Contains(t, b.dlq(t)[0].Header.Get(deadletter.HeaderReason), tt.words)
			} else {
				require.Eventually(t, func() bool { return b.ledgerEntry(t, 1).State == ledger.Delivered }, 60*time.Second, 20*time.Millisecond)
			}
			e := b.ledgerEntry(t, 1)
			require.Equal(t, tt.tries, e.Tries)
			require.Contains(t, e.Attempts[0].Error, tt.words)
			require.Equal(t, tt.ambiguous, e.Attempts[0].Ambiguous)
			if tt.tries == 1 {
				require.Equal(t, ledger.Failed, e.State)
				require.False(t, e.Retryable, "refused for good")
			}
			require.Eventually(t, func() bool { return w.received() == tt.sent }, 30*time.Second, 20*time.Millisecond)
		})
	}
}

// A throttled send is tried again no sooner than the provider's
// Retry-After, however short the worker's own retry delay.
func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	b := setup(t, 1)
	var mu sync.Mutex
	var calls []time.Time
	b.ses.Faults(func(call int) sestest.Fault {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, time.Now())
		if call == 1 {
			return sestest.Throttle(2 * time.Second)
		}
		return sestest.None
	})
	b.publish(t, 1)

	require.Eventually(t, func() bool { return b.sent() == 1 }, 60*time.Second, 20*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, 2)
	// A lower bound only: a loaded machine can make the wait longer, never
	// shorter.
	require.GreaterOrEqual(t, calls[1].Sub(calls[0]), 2*time.Second, "retried before SES's Retry-After (the retry delay is 50ms)")
}
