package awssmstest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery/sms/awssms/awssmstest"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, heraldtest.LeakOptions...)
}

const (
	signedBy = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261130/eu-west-1/sms-voice/aws4_request, SignedHeaders=host;x-amz-target, Signature=00"
	sendBody = `{"DestinationPhoneNumber":"+34600111222","MessageBody":"Su pedido está en camino","MessageType":"TRANSACTIONAL",` +
		`"OriginationIdentity":"pool-0123","Context":{"herald_dedupe_key":"acme:PO-2026-0042"}}`
)

type request struct {
	auth, target, contentType, body string
}

// ok is a SendTextMessage request as the SDK sends it.
func ok() request {
	return request{auth: signedBy, target: awssmstest.Target, contentType: awssmstest.ContentType, body: sendBody}
}

// post sends r without the SDK, to see the wire answer.
func post(t *testing.T, url string, r request) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(r.body))
	require.NoError(t, err)
	for k, v := range map[string]string{"Authorization": r.auth, "X-Amz-Target": r.target, "Content-Type": r.contentType} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := heraldtest.HTTPClient(t).Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// errorBody is an error answer's JSON body.
func errorBody(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body
}

func TestMalformedRequestsAreRefusedAndNotRecorded(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	srv.FailNext(1, awssmstest.ServerError) // not used up by any of these
	tests := []struct {
		name string
		edit func(*request)
		code string
	}{
		{"unsigned", func(r *request) { r.auth = "" }, "MissingAuthenticationTokenException"},
		{"signed for another service", func(r *request) { r.auth = strings.Replace(signedBy, "/sms-voice/", "/ses/", 1) }, "MissingAuthenticationTokenException"},
		{"another operation", func(r *request) { r.target = "PinpointSMSVoiceV2.SendVoiceMessage" }, "UnknownOperationException"},
		{"not awsJson1_0", func(r *request) { r.contentType = "application/json" }, "SerializationException"},
		{"not JSON", func(r *request) { r.body = "DestinationPhoneNumber=+34600111222" }, "SerializationException"},
	}
	for _, tt := range tests {
		r := ok()
		tt.edit(&r)
		resp := post(t, srv.URL(), r)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, tt.name)
		require.True(t, strings.HasPrefix(resp.Header.Get("X-Amzn-ErrorType"), tt.code+":"), tt.name)
		require.Equal(t, "com.amazonaws.pinpointsmsvoicev2#"+tt.code, errorBody(t, resp)["__type"], tt.name)
	}
	require.Equal(t, http.StatusInternalServerError, post(t, srv.URL(), ok()).StatusCode, "the queued fault waited for a well-formed request")
	require.Equal(t, http.StatusOK, post(t, srv.URL(), ok()).StatusCode)
	require.Len(t, srv.Received(), 1)
	require.Equal(t, len(tests)+2, srv.Calls())
}

func TestAcceptsAndRecords(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	resp := post(t, srv.URL(), ok())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, awssmstest.ContentType, resp.Header.Get("Content-Type"))
	var out struct{ MessageId string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, []awssmstest.Received{{
		To:                  "+34600111222",
		Body:                "Su pedido está en camino",
		OriginationIdentity: "pool-0123",
		MessageType:         "TRANSACTIONAL",
		Context:             map[string]string{"herald_dedupe_key": "acme:PO-2026-0042"},
		AccessKeyID:         "AKIDEXAMPLE",
		MessageID:           out.MessageId,
	}}, srv.Received())

	// What Received returns is a copy: a test cannot rewrite history.
	srv.Received()[0].Context["herald_dedupe_key"] = "changed"
	require.Equal(t, "acme:PO-2026-0042", srv.Received()[0].Context["herald_dedupe_key"])
}

// The numbers and values the service refuses, in its words: the exception,
// its Reason and the Fields the SDK reads.
func TestRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		from   string
		to     string
		code   string
		reason string
		field  string
	}{
		{"invalid number", "+34600111222", awssmstest.InvalidNumber, "ValidationException", "INVALID_PARAMETER", "DestinationPhoneNumber"},
		{"not the API's pattern", "+34600111222", "+34 600", "ValidationException", "INVALID_PARAMETER", "DestinationPhoneNumber"},
		{"opted out", "+34600111222", awssmstest.OptedOutNumber, "ConflictException", "DESTINATION_PHONE_NUMBER_OPTED_OUT", ""},
		{"empty body", `"MessageBody":"Su pedido está en camino"`, `"MessageBody":""`, "ValidationException", "MISSING_PARAMETER", "MessageBody"},
		{"unknown message type", "TRANSACTIONAL", "URGENT", "ValidationException", "INVALID_PARAMETER", "MessageType"},
		{"context key with a space", "herald_dedupe_key", "herald dedupe key", "ValidationException", "INVALID_PARAMETER", "Context"},
		{"context value ending in a space", `PO-2026-0042"`, `PO-2026-0042 "`, "ValidationException", "INVALID_PARAMETER", "Context.herald_dedupe_key"},
		{"context value over 800", `acme:PO-2026-0042"`, strings.Repeat("x", 801) + `"`, "ValidationException", "INVALID_PARAMETER", "Context.herald_dedupe_key"},
		{"six context entries", `"Context":{`, `"Context":{"a":"1","b":"2","c":"3","d":"4","e":"5",`, "ValidationException", "INVALID_PARAMETER", "Context"},
	}
	for _, tt := range tests {
		srv := awssmstest.New(t)
		r := ok()
		r.body = strings.Replace(r.body, tt.from, tt.to, 1)
		require.NotEqual(t, sendBody, r.body, tt.name)
		resp := post(t, srv.URL(), r)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, tt.name)
		require.True(t, strings.HasPrefix(resp.Header.Get("X-Amzn-ErrorType"), tt.code+":"), tt.name)
		body := errorBody(t, resp)
		require.Equal(t, "com.amazonaws.pinpointsmsvoicev2#"+tt.code, body["__type"], tt.name)
		require.Equal(t, tt.reason, body["Reason"], tt.name)
		require.NotEmpty(t, body["Message"], tt.name)
		if tt.field != "" {
			fields := body["Fields"].([]any)
			require.Equal(t, tt.field, fields[0].(map[string]any)["Name"], tt.name)
		}
		require.Empty(t, srv.Received(), tt.name)
	}
}

// The hook a conformance suite needs: the next call fails with a 5xx, the
// one after succeeds.
func TestFailNextComesBeforeTheSchedule(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	srv.Faults(func(int) awssmstest.Fault { return awssmstest.Throttle(0) })
	srv.FailNext(2, awssmstest.ServerError)
	var statuses []int
	for range 3 {
		statuses = append(statuses, post(t, srv.URL(), ok()).StatusCode)
	}
	require.Equal(t, []int{500, 500, 400}, statuses)
	srv.Faults(nil)
	require.Equal(t, http.StatusOK, post(t, srv.URL(), ok()).StatusCode)
	require.Len(t, srv.Received(), 1)
}

func TestServerErrorCarriesItsRequestID(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	srv.FailNext(1, awssmstest.ServerError)
	resp := post(t, srv.URL(), ok())
	require.Equal(t, "fake-request-1", resp.Header.Get("X-Amzn-RequestId"))
	require.Equal(t, "fake-request-1", errorBody(t, resp)["RequestId"])
}

func TestBodyOnlyLeavesOutTheHeader(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	srv.FailNext(1, awssmstest.AccessDenied.BodyOnly())
	resp := post(t, srv.URL(), ok())
	require.Empty(t, resp.Header.Get("X-Amzn-ErrorType"))
	require.Equal(t, "com.amazonaws.pinpointsmsvoicev2#AccessDeniedException", errorBody(t, resp)["__type"])
}

func TestThrottleSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	srv.FailNext(1, awssmstest.Throttle(1500*time.Millisecond))
	resp := post(t, srv.URL(), ok())
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "2", resp.Header.Get("Retry-After"), "whole seconds, rounded up")
	require.Equal(t, "com.amazonaws.pinpointsmsvoicev2#ThrottlingException", errorBody(t, resp)["__type"])
}

// A success without a message id is a message AWS took: it is recorded,
// because it may well go out.
func TestNoMessageIDStillRecords(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	srv.FailNext(1, awssmstest.NoMessageID)
	resp := post(t, srv.URL(), ok())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(body))
	got := srv.Received()
	require.Len(t, got, 1)
	require.Empty(t, got[0].MessageID)
}

// Hold keeps a request under way until the test lets it go; only then is
// the message accepted.
func TestHoldAnswersWhenReleased(t *testing.T) {
	t.Parallel()
	srv := awssmstest.New(t)
	release := make(chan struct{})
	srv.FailNext(1, awssmstest.Hold(release))
	status := make(chan int, 1)
	client := heraldtest.HTTPClient(t)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/", strings.NewReader(sendBody))
		req.Header.Set("Authorization", signedBy)
		req.Header.Set("X-Amz-Target", awssmstest.Target)
		req.Header.Set("Content-Type", awssmstest.ContentType)
		resp, err := client.Do(req)
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

// A test that ends while a Delay holds a request must not hang in cleanup,
// and its client sees a cut connection, not a success.
func TestStopReleasesDelays(t *testing.T) {
	t.Parallel()
	errc := make(chan error, 1)
	client := heraldtest.HTTPClient(t)
	t.Run("server", func(t *testing.T) {
		srv := awssmstest.New(t)
		srv.FailNext(1, awssmstest.Delay(time.Hour))
		req, err := http.NewRequest(http.MethodPost, srv.URL()+"/", strings.NewReader(sendBody))
		require.NoError(t, err)
		req.Header.Set("Authorization", signedBy)
		req.Header.Set("X-Amz-Target", awssmstest.Target)
		req.Header.Set("Content-Type", awssmstest.ContentType)
		go func() {
			resp, err := client.Do(req)
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
