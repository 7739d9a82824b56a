package fcmtest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/push/fcm/fcmtest"
)

// TestAForgedBearerIsRefusedInGooglesFormat posts as a client that never
// got a token: the answer is a google.rpc.Status, as FCM's is.
func TestAForgedBearerIsRefusedInGooglesFormat(t *testing.T) {
	t.Parallel()
	fake := fcmtest.New(t)
	req, err := http.NewRequest(http.MethodPost, fake.Endpoint()+"/projects/"+fcmtest.Project+"/messages:send",
		strings.NewReader(`{"message":{"token":"device-1","notification":{"title":"Hi"}}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer forged")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	var answer struct {
		Error struct {
			Code   int    `json:"code"`
			Status string `json:"status"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
	require.Equal(t, http.StatusUnauthorized, answer.Error.Code)
	require.Equal(t, "UNAUTHENTICATED", answer.Error.Status)
	require.Empty(t, fake.Messages())
}
