package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push"
	"github.com/heraldhq/herald/services/delivery/push/webpush"
	"github.com/heraldhq/herald/shared/recipient"
)

// devSinks starts dev's hook and push sinks in dir for pushes signed by
// the VAPID pair's public half, as StartDev does.
func devSinks(t *testing.T, dir, vapidPublic string) *Dev {
	t.Helper()
	d := &Dev{DataDir: dir}
	require.NoError(t, d.startHookSink("127.0.0.1:0", vapidPublic, slog.New(slog.DiscardHandler)))
	t.Cleanup(func() { require.NoError(t, stopHookSink(context.Background(), d.hooks)) })
	return d
}

// devPusher is the Web Push provider as dev configures it: its VAPID
// pair, allowed to reach this machine.
func devPusher(t *testing.T, private, public string) *webpush.Sender {
	t.Helper()
	s, err := webpush.New(webpush.Config{VAPIDPublicKey: public, VAPIDPrivateKey: private, Subscriber: "mailto:dev@localhost",
		AllowPrivateNetworks: true})
	require.NoError(t, err)
	return s
}

// readSubscription reads the sink's subscription file as the devices
// API's PUT reads its body, into a device that passes the directory's
// checks.
func readSubscription(t *testing.T, d *Dev) recipient.Device {
	t.Helper()
	b, err := os.ReadFile(d.PushSubscription)
	require.NoError(t, err)
	var body struct {
		Kind         recipient.DeviceKind           `json:"kind"`
		Subscription *recipient.WebPushSubscription `json:"subscription"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&body))
	device := recipient.Device{Tenant: SampleTenant, Subscriber: "u-lucia", ID: "dev-browser", Kind: body.Kind, Subscription: body.Subscription}
	require.NoError(t, device.Validate())
	return device
}

func pushMessage(d recipient.Device, id, title string) push.Message {
	s := d.Subscription
	sub := push.Subscription{Endpoint: s.Endpoint, Keys: push.SubscriptionKeys{P256dh: s.Keys.P256dh, Auth: s.Keys.Auth}}
	return push.Message{ID: id, Subscription: &sub, Title: title, Body: "On its way", URL: "https://shop.example/PO-1"}
}

// pushFiles are the pushes the sink has written.
func pushFiles(t *testing.T, d *Dev) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(d.PushDir, "*-*.json"))
	require.NoError(t, err)
	return files
}

// Dev's push sink keeps its subscription's keys in DataDir/push.key, made
// private on first use and the same on every later run — a device
// registered with an earlier run's subscription stays readable — and
// writes its subscription as a devices PUT body the directory accepts.
func TestDevPushSubscriptionIsKeptInItsDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, public, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	first := readSubscription(t, devSinks(t, dir, public))
	info, err := os.Stat(DevPushKeyFile(dir))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	again := readSubscription(t, devSinks(t, dir, public))
	require.Equal(t, first.Subscription.Keys, again.Subscription.Keys, "the next run decrypts as this one")
	require.Equal(t, filepath.Base(first.Subscription.Endpoint), filepath.Base(again.Subscription.Endpoint), "and has the same endpoint id")
}

// A push the real Web Push provider sends, with dev's VAPID pair, to the
// sink's subscription is verified, decrypted and written under
// DataDir/push as the JSON the service worker gets; one signed by another
// pair is refused (401), as a push service refuses it, and nothing is
// written.
func TestAPushToDevsSubscriptionLandsDecrypted(t *testing.T) {
	t.Parallel()
	private, public, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	d := devSinks(t, t.TempDir(), public)
	device := readSubscription(t, d)

	_, err = devPusher(t, private, public).Send(context.Background(), pushMessage(device, "ntf_1", "PO-1 shipped"))
	require.NoError(t, err)
	files := pushFiles(t, d)
	require.Len(t, files, 1)
	require.Regexp(t, `-ntf_1\.json$`, files[0])
	b, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var got webpush.Payload
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, webpush.Payload{ID: "ntf_1", Title: "PO-1 shipped", Body: "On its way", URL: "https://shop.example/PO-1"}, got)

	otherPrivate, otherPublic, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	_, err = devPusher(t, otherPrivate, otherPublic).Send(context.Background(), pushMessage(device, "ntf_2", "Not dev's"))
	require.ErrorContains(t, err, "HTTP 401")
	require.Len(t, pushFiles(t, d), 1, "nothing more is written")
}

// recorded is a push as the sink received it.
type recorded struct {
	url    string
	header http.Header
	body   []byte
}

// A push whose body does not decrypt with the subscription's keys is
// refused (400), as are one without a VAPID header (401), one not
// aes128gcm (415), one over 4096 bytes (413) and one to another
// subscription (404): nothing is written.
func TestTheDevPushSinkRefusesWhatABrowserCouldNotRead(t *testing.T) {
	t.Parallel()
	private, public, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	dir := t.TempDir()
	sink, err := newPushSink(dir, public, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	first := make(chan recorded, 1) // the first push, to replay changed
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PushPath+"{id}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		select {
		case first <- recorded{header: r.Header.Clone(), body: bytes.Clone(body)}:
		default:
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sink.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	require.NoError(t, sink.writeSubscription(srv.URL))
	d := &Dev{PushDir: sink.dir, PushSubscription: sink.SubscriptionFile()}
	device := readSubscription(t, d)
	_, err = devPusher(t, private, public).Send(context.Background(), pushMessage(device, "ntf_1", "PO-1 shipped"))
	require.NoError(t, err)
	require.Len(t, pushFiles(t, d), 1)
	sent := <-first

	replay := func(edit func(*recorded)) int {
		r := recorded{url: device.Subscription.Endpoint, header: sent.header.Clone(), body: bytes.Clone(sent.body)}
		edit(&r)
		req, err := http.NewRequest(http.MethodPost, r.url, bytes.NewReader(r.body))
		require.NoError(t, err)
		req.Header = r.header
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	require.Equal(t, http.StatusBadRequest, replay(func(r *recorded) { r.body[len(r.body)-1] ^= 1 }))
	require.Equal(t, http.StatusUnauthorized, replay(func(r *recorded) { r.header.Del("Authorization") }))
	require.Equal(t, http.StatusUnsupportedMediaType, replay(func(r *recorded) { r.header.Set("Content-Encoding", "aesgcm") }))
	require.Equal(t, http.StatusRequestEntityTooLarge, replay(func(r *recorded) { r.body = append(r.body, make([]byte, 4097)...) }))
	require.Equal(t, http.StatusNotFound, replay(func(r *recorded) { r.url = srv.URL + PushPath + "another" }))
	require.Len(t, pushFiles(t, d), 1, "nothing more is written")
	require.Equal(t, http.StatusCreated, replay(func(*recorded) {}), "the push itself, sent again, is taken")
}
