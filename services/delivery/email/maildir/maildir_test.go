package maildir_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/services/delivery/email/emailtest"
	"github.com/heraldhq/herald/services/delivery/email/maildir"
)

func TestConformance(t *testing.T) {
	emailtest.Run(t, func(t *testing.T) emailtest.Harness {
		dir := t.TempDir()
		sink, err := maildir.New(dir)
		require.NoError(t, err)
		return emailtest.Harness{
			Provider: sink,
			Received: func(t *testing.T) []emailtest.Parsed {
				files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
				require.NoError(t, err)
				var out []emailtest.Parsed
				for _, f := range files {
					b, err := os.ReadFile(f)
					require.NoError(t, err)
					out = append(out, emailtest.Parse(t, b))
				}
				return out
			},
		}
	})
}
