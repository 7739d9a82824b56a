package emailtest

import (
	"encoding/base64"
	"io"
	"mime/quotedprintable"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func decodeBody(t *testing.T, encoding string, body io.Reader) []byte {
	t.Helper()
	switch strings.ToLower(encoding) {
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, body)
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	}
	data, err := io.ReadAll(body)
	require.NoError(t, err)
	return data
}
