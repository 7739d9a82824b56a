package preferencepage_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }
