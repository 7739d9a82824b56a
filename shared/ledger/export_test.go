package ledger

import "time"

// SetSettle lets a test drop stale index keys without waiting a minute.
func SetSettle(l *Ledger, d time.Duration) { l.settle = d }
