package render_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
)

// Rendering runs in parallel (TestParallelRendersAgree): nothing it
// starts may outlive it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, heraldtest.LeakOptions...)
}
