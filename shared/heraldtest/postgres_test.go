package heraldtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestPostgresServerRestarts(t *testing.T) {
	t.Parallel()
	p := heraldtest.StartPostgresServer(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.URL())
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)")
	require.NoError(t, err)
	p.Restart()
	require.Error(t, conn.Ping(ctx), "the restart cut the connection")
	conn, err = pgx.Connect(ctx, p.URL())
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, "SELECT n FROM kept").Scan(&n))
	require.Equal(t, 1, n, "committed data survives the restart")
}
