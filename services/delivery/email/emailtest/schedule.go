package emailtest

// Fault schedules for the fake providers (sestest, sendgridtest,
// smtptest): each fake takes a func(call int) Fault deciding what happens to
// its n-th call, counted from 1, and each fake's zero Fault means none.

// FailFirst injects f into the first n calls.
func FailFirst[F any](n int, f F) func(call int) F {
	return func(call int) F {
		var none F
		if call <= n {
			return f
		}
		return none
	}
}

// FailEvery injects f into every k-th call: k, 2k, 3k… — a deterministic
// fault rate of 1/k.
func FailEvery[F any](k int, f F) func(call int) F {
	return func(call int) F {
		var none F
		if k > 0 && call%k == 0 {
			return f
		}
		return none
	}
}

// Sequence injects faults[i] into call i+1, and none after the last.
func Sequence[F any](faults ...F) func(call int) F {
	return func(call int) F {
		var none F
		if call <= len(faults) {
			return faults[call-1]
		}
		return none
	}
}
