package dnstest_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/domains/dnstest"
	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// Go's resolver reads what the fake publishes: each TXT record whole, a
// long one joined from its strings; an unpublished name is not found.
func TestGoResolverReadsThePublishedRecords(t *testing.T) {
	t.Parallel()
	srv := dnstest.New(t)
	long := strings.Repeat("x", 300)
	srv.PublishTXT("_herald.acme.example", "herald-verification=abc")
	srv.PublishTXT("_herald.ACME.example.", long)
	r, ctx := srv.Resolver(), context.Background()

	got, err := r.LookupTXT(ctx, "_herald.acme.example")
	require.NoError(t, err)
	require.Equal(t, []string{"herald-verification=abc", long}, got)

	_, err = r.LookupTXT(ctx, "_herald.globex.example")
	var dnsErr *net.DNSError
	require.True(t, errors.As(err, &dnsErr), "%v", err)
	require.True(t, dnsErr.IsNotFound, "%v", err)
}
