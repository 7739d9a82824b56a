package sendgridtest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/sendgrid/sendgridtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const key = "SG.fake-key"

const valid = `{
	"personalizations": [{"to": [{"email": "olga@zarya.example", "name": "Olga"}]}],
	"from": {"email": "orders@acme.example", "name": "Orders"},
	"subject": "PO-2026-0042",
	"content": [{"type": "text/plain", "value": "Hello"}],
	"attachments": [{"content": "JVBERg==", "type": "application/pdf", "filename": "po.pdf", "disposition": "attachment"}],
	"headers": {"Message-ID": "<ntf_1@acme.example>"},
	"custom_args": {"herald_tenant": "acme"}
}`

func post(t *testing.T, url, auth, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/v3/mail/send", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	// A client of its own: other tests closing their servers close
	// http.DefaultTransport's idle connections under this one.
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestWireProtocol(t *testing.T) {
	t.Parallel()
	fake := sendgridtest.New(t, key)

	resp, body := post(t, fake.URL(), "Bearer "+key, valid)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.Empty(t, body)
	id := resp.Header.Get("X-Message-Id")
	require.NotEmpty(t, id)

	resp, body = post(t, fake.URL(), "Bearer SG.other", valid)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.JSONEq(t, `{"errors":[{"message":"The provided authorization grant is invalid, expired, or revoked","field":null,"help":null}]}`, body)

	resp, _ = post(t, fake.URL(), "Bearer "+key, `{"personalizations": [`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	resp, body = post(t, fake.URL(), "Bearer "+key, strings.Replace(valid, "olga@zarya.example", "not an address", 1))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.JSONEq(t, `{"errors":[{"message":"Does not contain a valid address.","field":"personalizations.0.to.0.email","help":"http://sendgrid.com/docs/API_Reference/Web_API_v3/Mail/errors.html#message.personalizations.to"}]}`, body)

	resp, body = post(t, fake.URL(), "Bearer "+key, `{"personalizations": [{"to": [{"email": "olga@zarya.example"}]}]}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, `"field":"from"`)
	require.Contains(t, body, `"field":"subject"`)
	require.Contains(t, body, `"field":"content"`)

	require.Equal(t, 5, fake.Calls())
	received := fake.Received()
	require.Len(t, received, 1)
	require.Equal(t, sendgridtest.Received{
		MessageID: id,
		From:      "orders@acme.example", FromName: "Orders",
		To: "olga@zarya.example", ToName: "Olga",
		Subject: "PO-2026-0042", Text: "Hello",
		Headers:                map[string]string{"Message-ID": "<ntf_1@acme.example>"},
		CustomArgs:             map[string]string{"herald_tenant": "acme"},
		Attachments:            map[string][]byte{"po.pdf": []byte("%PDF")},
		AttachmentTypes:        map[string]string{"po.pdf": "application/pdf"},
		AttachmentDispositions: map[string]string{"po.pdf": "attachment"},
	}, received[0])
	parsed := received[0].Parsed()
	require.Equal(t, "<ntf_1@acme.example>", parsed.MessageID)
	require.Equal(t, "olga@zarya.example", parsed.To)
}

func TestFaultSchedules(t *testing.T) {
	t.Parallel()
	first := emailtest.FailFirst(2, sendgridtest.ServerError)
	every := emailtest.FailEvery(3, sendgridtest.Unauthorized)
	var gotFirst, gotEvery []string
	for call := 1; call <= 6; call++ {
		gotFirst = append(gotFirst, first(call).String())
		gotEvery = append(gotEvery, every(call).String())
	}
	require.Equal(t, []string{"ServerError", "ServerError", "None", "None", "None", "None"}, gotFirst)
	require.Equal(t, []string{"None", "None", "Unauthorized", "None", "None", "Unauthorized"}, gotEvery)
}

func TestNoMessageIDStillRecords(t *testing.T) {
	t.Parallel()
	fake := sendgridtest.New(t, key)
	fake.Faults(func(int) sendgridtest.Fault { return sendgridtest.NoMessageID })
	resp, _ := post(t, fake.URL(), "Bearer "+key, valid)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.Empty(t, resp.Header.Get("X-Message-Id"))
	got := fake.Received()
	require.Len(t, got, 1)
	require.Empty(t, got[0].MessageID, "recorded with the id it was answered with: none")
	require.Equal(t, "olga@zarya.example", got[0].To)
}

// A request stuck in Timeout must not hold up the test's cleanup, nor get an
// answer that looks like a success.
func TestCloseAbandonsPendingTimeout(t *testing.T) {
	t.Parallel()
	done := make(chan error, 1)
	t.Run("server", func(t *testing.T) {
		fake := sendgridtest.New(t, key)
		fake.Faults(func(int) sendgridtest.Fault { return sendgridtest.Timeout(time.Hour) })
		go func() {
			req, _ := http.NewRequest(http.MethodPost, fake.URL()+"/v3/mail/send", strings.NewReader(valid))
			req.Header.Set("Authorization", "Bearer "+key)
			// A client of its own: other tests closing their servers close
			// http.DefaultTransport's idle connections under this one.
			resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		require.Eventually(t, func() bool { return fake.Calls() == 1 }, 5*time.Second, time.Millisecond)
	})
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the pending request outlived the server")
	}
}
