package tenant_test

import (
	"fmt"

	"github.com/heraldhq/herald/shared/tenant"
)

// A config file's plans: section adds plans and changes built-in ones;
// the built-in plans are always there.
func ExamplePlans_WithDefaults() {
	fromFile := tenant.Plans{
		"partner": {Description: "Resellers, billed apart."},
		"free":    {Description: "Ten emails a day."},
	}
	plans := fromFile.WithDefaults()
	for _, name := range plans.Names() {
		fmt.Printf("%-10s %s\n", name, plans[name].Description)
	}
	// Output:
	// enterprise Large volumes and negotiated terms.
	// free       Ten emails a day.
	// indie      One small business sending its own notifications.
	// partner    Resellers, billed apart.
	// startup    A growing product with several senders and channels.
}
