package sestest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, heraldtest.LeakOptions...)
}

const sendPath = "/v2/email/outbound-emails"

// post sends a SendEmail body without the SDK, to see the wire answer.
func post(t *testing.T, url, auth, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := heraldtest.HTTPClient(t).Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

const (
	signedBy = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261130/eu-west-1/ses/aws4_request, SignedHeaders=host, Signature=00"
	sendBody = `{"FromEmailAddress":"a@acme.example","Destination":{"ToAddresses":["b@zarya.example"]},` +
		`"Content":{"Raw":{"Data":"U3ViamVjdDogaGkNCg0KaGk="}},"EmailTags":[{"Name":"herald_tenant","Value":"acme"}]}`
)

func TestWire(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)

	resp := post(t, srv.URL()+sendPath, "", sendBody)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Equal(t, "UnrecognizedClientException", resp.Header.Get("X-Amzn-ErrorType"))

	resp = post(t, srv.URL()+"/v2/email/templates", signedBy, sendBody)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp = post(t, srv.URL()+sendPath, signedBy, strings.Replace(sendBody, "b@zarya.example", "not an address", 1))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "BadRequestException", resp.Header.Get("X-Amzn-ErrorType"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.JSONEq(t, `{"message":"Illegal address"}`, string(body))

	resp = post(t, srv.URL()+sendPath, signedBy, sendBody)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got := srv.Received()
	require.Len(t, got, 1)
	require.Contains(t, string(got[0].Raw), "Subject: hi")
	require.Equal(t, []string{"b@zarya.example"}, got[0].To)
	require.Equal(t, map[string]string{"herald_tenant": "acme"}, got[0].Tags)
	require.Equal(t, 4, srv.Calls())
}

func TestThrottleSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	srv.Faults(emailtest.FailFirst(1, sestest.Throttle(1500*time.Millisecond)))
	resp := post(t, srv.URL()+sendPath, signedBy, sendBody)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "2", resp.Header.Get("Retry-After"), "whole seconds, rounded up")
	require.Equal(t, http.StatusOK, post(t, srv.URL()+sendPath, signedBy, sendBody).StatusCode)
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	first := emailtest.FailFirst(2, sestest.ServerError)
	every := emailtest.FailEvery(3, sestest.NoMessageID)
	seq := emailtest.Sequence(sestest.Unauthorized, sestest.None, sestest.AccountSuspended)
	var got []string
	for call := 1; call <= 6; call++ {
		got = append(got, first(call).String()+"/"+every(call).String()+"/"+seq(call).String())
	}
	require.Equal(t, []string{
		"InternalFailure/None/UnrecognizedClientException",
		"InternalFailure/None/None",
		"None/NoMessageID/AccountSuspendedException",
		"None/None/None",
		"None/None/None",
		"None/NoMessageID/None",
	}, got)
}

// A test that ends while a Timeout holds a request must not hang in
// cleanup, and its client sees a cut connection, not a success.
func TestStopReleasesTimeouts(t *testing.T) {
	t.Parallel()
	errc := make(chan error, 1)
	t.Run("server", func(t *testing.T) {
		srv := sestest.New(t)
		srv.Faults(func(int) sestest.Fault { return sestest.Timeout(time.Hour) })
		req, err := http.NewRequest(http.MethodPost, srv.URL()+sendPath, strings.NewReader(sendBody))
		require.NoError(t, err)
		req.Header.Set("Authorization", signedBy)
		go func() {
			resp, err := heraldtest.HTTPClient(t).Do(req)
			if err == nil {
				_ = resp.Body.Close()
			}
			errc <- err
		}()
		require.Eventually(t, func() bool { return srv.Calls() == 1 }, 5*time.Second, time.Millisecond)
	})
	// The server's cleanup has run: the held request must be cut now, not
	// when its hour is up (a bound on the wait, not a measured duration).
	select {
	case err := <-errc:
		require.Error(t, err)
	case <-time.After(time.Minute):
		t.Fatal("stopping the server left a held request hanging")
	}
}

// A success without a message id is a message SES took: it is recorded, as
// SendGrid's fake records its own, because it may well go out.
func TestNoMessageIDStillRecords(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	srv.Faults(emailtest.FailFirst(1, sestest.NoMessageID))
	resp := post(t, srv.URL()+sendPath, signedBy, sendBody)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(body))
	got := srv.Received()
	require.Len(t, got, 1)
	require.Empty(t, got[0].MessageID)
	require.Equal(t, []string{"b@zarya.example"}, got[0].To)
}

// Hold keeps a request under way until the test lets it go; only then is
// the message accepted.
func TestHoldAnswersWhenReleased(t *testing.T) {
	t.Parallel()
	srv := sestest.New(t)
	release := make(chan struct{})
	srv.Faults(emailtest.FailFirst(1, sestest.Hold(release)))
	status := make(chan int, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPost, srv.URL()+sendPath, strings.NewReader(sendBody))
		if err != nil {
			status <- 0
			return
		}
		req.Header.Set("Authorization", signedBy)
		resp, err := heraldtest.HTTPClient(t).Do(req)
		if err != nil {
			status <- 0
			return
		}
		_ = resp.Body.Close()
		status <- resp.StatusCode
	}()
	require.Eventually(t, func() bool { return srv.Calls() == 1 }, 5*time.Second, time.Millisecond)
	require.Empty(t, srv.Received(), "nothing accepted while held")
	close(release)
	require.Equal(t, http.StatusOK, <-status)
	require.Len(t, srv.Received(), 1)
}
