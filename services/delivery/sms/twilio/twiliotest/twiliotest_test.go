package twiliotest_test

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/services/delivery/sms/smstest"
	"github.com/heraldhq/herald/services/delivery/sms/twilio/twiliotest"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, heraldtest.LeakOptions...)
}

const (
	accountSID = "AC0123456789abcdef0123456789abcdef"
	authToken  = "f00dfeedf00dfeedf00dfeedf00dfeed"
	serviceSID = "MG0123456789abcdef0123456789abcdef"
	messages   = "/2010-04-01/Accounts/" + accountSID + "/Messages.json"
	cyrillic   = "Остаток SKU-42 на складе Мадрид: 3 шт."
)

type answer struct {
	status int
	header http.Header
	body   string
}

// post sends what twilio-go sends: a form, with basic authentication.
func post(t *testing.T, base, path, user, pass string, form url.Values) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.SetBasicAuth(user, pass)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// A client of its own: other tests closing their servers close
	// http.DefaultTransport's idle connections under this one.
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

func send(t *testing.T, fake *twiliotest.Server, form url.Values) answer {
	t.Helper()
	return post(t, fake.URL(), messages, accountSID, authToken, form)
}

func sms(to, body string) url.Values {
	return url.Values{"To": {to}, "From": {"+15017122661"}, "Body": {body}}
}

func TestAcceptsAsTwilioDoes(t *testing.T) {
	t.Parallel()
	fake := twiliotest.New(t, accountSID, authToken)
	got := send(t, fake, sms("+34600111222", cyrillic))
	require.Equal(t, http.StatusCreated, got.status, got.body)
	require.Equal(t, "application/json; charset=utf-8", got.header.Get("Content-Type"))

	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.body), &res))
	sid, _ := res["sid"].(string)
	require.Regexp(t, `^SM[0-9a-f]{32}$`, sid)
	for _, field := range []string{"date_created", "date_updated"} {
		date, _ := res[field].(string)
		_, err := time.Parse(time.RFC1123Z, date)
		require.NoError(t, err, "Twilio's dates are RFC 2822")
	}
	require.Equal(t, map[string]any{
		"account_sid": accountSID, "api_version": "2010-04-01", "body": cyrillic,
		"direction": "outbound-api", "from": "+15017122661", "to": "+34600111222",
		"messaging_service_sid": nil, "status": "queued", "num_segments": "1", "num_media": "0",
		"price": nil, "price_unit": "USD", "error_code": nil, "error_message": nil, "date_sent": nil,
		"sid": sid, "uri": "/2010-04-01/Accounts/" + accountSID + "/Messages/" + sid + ".json",
		"subresource_uris": map[string]any{"media": "/2010-04-01/Accounts/" + accountSID + "/Messages/" + sid + "/Media.json"},
	}, without(res, "date_created", "date_updated"))

	require.Equal(t, []twiliotest.Message{{
		SID: sid, Channel: event.ChannelSMS, To: "+34600111222", From: "+15017122661", Body: cyrillic, NumSegments: 1,
	}}, fake.Received())
}

func without(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		delete(m, k)
	}
	return m
}

// Through a messaging service alone, Twilio picks the sender later: the
// message is accepted, from no one yet.
func TestMessagingService(t *testing.T) {
	t.Parallel()
	fake := twiliotest.New(t, accountSID, authToken)
	got := send(t, fake, url.Values{"To": {"whatsapp:+34600111222"}, "MessagingServiceSid": {serviceSID},
		"ContentSid": {"HX0123456789abcdef0123456789abcdef"}, "ContentVariables": {`{"1":"SKU-42"}`}})
	require.Equal(t, http.StatusCreated, got.status, got.body)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.body), &res))
	require.Equal(t, "accepted", res["status"])
	require.Nil(t, res["from"])
	require.Equal(t, serviceSID, res["messaging_service_sid"])
	require.Equal(t, "0", res["num_segments"])

	received := fake.Received()
	require.Len(t, received, 1)
	require.Equal(t, smstest.Received{
		Channel: event.ChannelWhatsApp, To: "+34600111222",
		ContentSID: "HX0123456789abcdef0123456789abcdef", Variables: map[string]string{"1": "SKU-42"},
	}, received[0].Normalized())
}

func TestRefusesAsTwilioDoes(t *testing.T) {
	t.Parallel()
	fake := twiliotest.New(t, accountSID, authToken)
	valid := sms("+34600111222", "hi")
	with := func(key, value string) url.Values {
		f := url.Values{}
		for k, v := range valid {
			f[k] = v
		}
		if value == "" {
			f.Del(key)
		} else {
			f.Set(key, value)
		}
		return f
	}
	tests := []struct {
		name             string
		path, user, pass string
		form             url.Values
		status, code     int
		message          string
	}{
		{name: "WrongToken", pass: "wrong", status: 401, code: 20003, message: "Authenticate"},
		{name: "WrongAccount", user: "AC00000000000000000000000000000000", status: 401, code: 20003, message: "Authenticate"},
		{name: "AnotherAccountsMessages", path: "/2010-04-01/Accounts/AC00000000000000000000000000000000/Messages.json",
			status: 401, code: 20003, message: "Authenticate"},
		{name: "UnknownResource", path: "/2010-04-01/Accounts/" + accountSID + "/Calls.json",
			status: 404, code: 20404, message: "The requested resource /2010-04-01/Accounts/" + accountSID + "/Calls.json was not found"},
		{name: "NoTo", form: with("To", ""), status: 400, code: 21604, message: "A 'To' phone number is required."},
		{name: "NoSender", form: with("From", ""), status: 400, code: 21603,
			message: "A 'From' or 'MessagingServiceSid' parameter is required to send a message."},
		{name: "NoBody", form: with("Body", ""), status: 400, code: 21602, message: "Message body is required."},
		{name: "LongBody", form: with("Body", strings.Repeat("a", 1601)), status: 400, code: 21617,
			message: "The concatenated message body exceeds the 1600 character limit."},
		{name: "NotANumber", form: with("To", "600111222"), status: 400, code: 21211,
			message: "The 'To' number 600111222 is not a valid phone number."},
		{name: "MixedChannels", form: with("To", "whatsapp:+34600111222"), status: 400, code: 21910,
			message: "Invalid From and To pair. From and To should be of the same channel"},
		{name: "BadContentVariables", form: with("ContentVariables", "{1:"), status: 400, code: 21656,
			message: "The ContentVariables Parameter is invalid."},
		{name: "RelativeStatusCallback", form: with("StatusCallback", "/v1/inbound/twilio"), status: 400, code: 21609,
			message: "The StatusCallback URL /v1/inbound/twilio is not a valid URL."},
		{name: "MagicInvalidNumber", form: with("To", "+15005550001"), status: 400, code: 21211,
			message: "The 'To' number +15005550001 is not a valid phone number."},
		{name: "MagicUnsubscribed", form: with("To", "+15005550004"), status: 400, code: 21610,
			message: "Attempt to send to unsubscribed recipient"},
		{name: "MagicNotMobile", form: with("To", "+15005550009"), status: 400, code: 21614,
			message: "To number: +15005550009, is not a mobile number"},
	}
	for _, tt := range tests {
		got := post(t, fake.URL(), cmp.Or(tt.path, messages), cmp.Or(tt.user, accountSID), cmp.Or(tt.pass, authToken), cmpOrForm(tt.form, valid))
		require.Equal(t, tt.status, got.status, tt.name)
		requireTwilioError(t, got, tt.status, tt.code, tt.message)
	}
	require.Equal(t, len(tests), fake.Calls())
	require.Empty(t, fake.Received())
}

func cmpOrForm(f, or url.Values) url.Values {
	if f == nil {
		return or
	}
	return f
}

func requireTwilioError(t *testing.T, got answer, status, code int, message string) {
	t.Helper()
	require.Equal(t, status, got.status, got.body)
	want, err := json.Marshal(map[string]any{
		"code": code, "message": message, "status": status,
		"more_info": "https://www.twilio.com/docs/errors/" + strconv.Itoa(code),
	})
	require.NoError(t, err)
	require.JSONEq(t, string(want), got.body)
}

func TestFailNext(t *testing.T) {
	t.Parallel()
	fake := twiliotest.New(t, accountSID, authToken)
	fake.FailNext(2, twiliotest.ServerError)
	for range 2 {
		requireTwilioError(t, send(t, fake, sms("+34600111222", "hi")), 500, 20500, "An internal server error has occurred")
	}
	require.Equal(t, http.StatusCreated, send(t, fake, sms("+34600111222", "hi")).status)

	fake.FailNext(1, twiliotest.TooManyRequests(7*time.Second))
	got := send(t, fake, sms("+34600111222", "hi"))
	requireTwilioError(t, got, 429, 20429, "Too Many Requests")
	require.Equal(t, "7", got.header.Get("Retry-After"))

	fake.FailNext(1, twiliotest.BadGateway)
	got = send(t, fake, sms("+34600111222", "hi"))
	require.Equal(t, http.StatusBadGateway, got.status)
	require.Equal(t, "text/html", got.header.Get("Content-Type"))
	require.Contains(t, got.body, "502 Bad Gateway")

	// Twilio took it, so it counts as received; the answer is useless.
	fake.FailNext(1, twiliotest.AcceptedWithoutSID)
	got = send(t, fake, sms("+34600111222", "kept"))
	require.Equal(t, http.StatusCreated, got.status)
	require.JSONEq(t, `{"status": "queued"}`, got.body)

	received := fake.Received()
	require.Len(t, received, 2)
	require.Equal(t, "kept", received[1].Body)
	require.Equal(t, 6, fake.Calls())
}

func TestPerRecipientRules(t *testing.T) {
	t.Parallel()
	fake := twiliotest.New(t, accountSID, authToken)
	fake.Refuse("+34600000001", twiliotest.InvalidNumber)
	fake.Refuse("whatsapp:+34600000002", twiliotest.Unsubscribed)
	fake.CloseSession("+34600000003")
	whatsapp := func(to string, extra url.Values) url.Values {
		f := url.Values{"To": {"whatsapp:" + to}, "From": {"whatsapp:+15017122661"}}
		for k, v := range extra {
			f[k] = v
		}
		return f
	}
	body := url.Values{"Body": {"hi"}}
	template := url.Values{"ContentSid": {"HX0123456789abcdef0123456789abcdef"}}

	requireTwilioError(t, send(t, fake, sms("+34600000001", "hi")), 400, 21211,
		"The 'To' number +34600000001 is not a valid phone number.")
	requireTwilioError(t, send(t, fake, whatsapp("+34600000002", body)), 400, 21610,
		"Attempt to send to unsubscribed recipient")
	require.Equal(t, http.StatusCreated, send(t, fake, sms("+34600000002", "hi")).status, "the rule is for the WhatsApp address")

	requireTwilioError(t, send(t, fake, whatsapp("+34600000003", body)), 400, 63016,
		"Failed to send freeform message because you are outside the allowed window. If you are using WhatsApp, please use a Message Template.")
	require.Equal(t, http.StatusCreated, send(t, fake, whatsapp("+34600000003", template)).status, "a template opens the conversation")
	require.Equal(t, http.StatusCreated, send(t, fake, sms("+34600000003", "hi")).status, "SMS has no session window")

	var to []string
	for _, m := range fake.Received() {
		to = append(to, m.To)
	}
	require.Equal(t, []string{"+34600000002", "whatsapp:+34600000003", "+34600000003"}, to)
}

func TestSegments(t *testing.T) {
	t.Parallel()
	fake := twiliotest.New(t, accountSID, authToken)
	tests := []struct {
		body     string
		segments int
	}{
		{strings.Repeat("a", 160), 1},
		{strings.Repeat("a", 161), 2},
		{strings.Repeat("a", 306), 2},
		{strings.Repeat("a", 307), 3},
		{strings.Repeat("€", 80), 1}, // the extension takes two septets
		{strings.Repeat("€", 81), 2},
		{strings.Repeat("ж", 70), 1},
		{strings.Repeat("ж", 71), 2},
		{strings.Repeat("ж", 134), 2},
		{strings.Repeat("ж", 135), 3},
		{strings.Repeat("a", 69) + "😀", 2}, // outside the BMP: two UTF-16 units
		{cyrillic, 1},
	}
	for _, tt := range tests {
		require.Equal(t, http.StatusCreated, send(t, fake, sms("+34600111222", tt.body)).status)
	}
	for i, m := range fake.Received() {
		require.Equal(t, tests[i].segments, m.NumSegments, tests[i].body)
	}
}

func TestConcurrentSends(t *testing.T) {
	t.Parallel()
	fake := twiliotest.New(t, accountSID, authToken)
	fake.FailNext(5, twiliotest.ServerError)
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	client := &http.Client{Transport: &http.Transport{}}
	for i := range statuses {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, fake.URL()+messages, strings.NewReader(sms("+34600111222", "hi").Encode()))
			req.SetBasicAuth(accountSID, authToken)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if resp, err := client.Do(req); err == nil {
				statuses[i] = resp.StatusCode
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	client.CloseIdleConnections()
	created := 0
	for _, s := range statuses {
		if s == http.StatusCreated {
			created++
		}
	}
	require.Equal(t, 15, created)
	sids := map[string]bool{}
	for _, m := range fake.Received() {
		sids[m.SID] = true
	}
	require.Len(t, sids, 15, "every message has a SID of its own")
	require.Equal(t, 20, fake.Calls())
}

// A request held by Delay must not hold up the test's cleanup, nor get an
// answer that looks like a success.
func TestCloseAbandonsPendingDelay(t *testing.T) {
	t.Parallel()
	done := make(chan error, 1)
	t.Run("server", func(t *testing.T) {
		fake := twiliotest.New(t, accountSID, authToken)
		fake.Delay(time.Hour)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, fake.URL()+messages, strings.NewReader(sms("+34600111222", "hi").Encode()))
			req.SetBasicAuth(accountSID, authToken)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
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
