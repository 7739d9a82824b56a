package workflow

// States are every state a run may be in, in the order a run goes
// through them: for a filter's choices.
var States = []State{Running, Waiting, Done, Cancelled, Failed, Skipped}

// Ended says whether nothing more happens to a run in state s: it cannot
// be cancelled.
func (s State) Ended() bool { return s.ended() }
