package consumer

// Idle is the work f did for no delivery: picks that found no key in
// line, and pulls that found nothing.
func (f *Fair) Idle() (wakes, emptyPulls int64) { return f.idleWakes.Load(), f.emptyPulls.Load() }
