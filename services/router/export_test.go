package router

import "time"

// FanoutWindow is how many deliveries a fan-out publishes at once.
const FanoutWindow = fanoutWindow

// SetFanoutPatience sets how long s's fan-out waits for the events being
// routed; call it before Start.
func SetFanoutPatience(s *Service, d time.Duration) { s.gate.patience = d }

// FanoutWaits is how often s's fan-out found an event being routed and
// waited for it.
func FanoutWaits(s *Service) int {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	return s.gate.waits
}

// FanoutRests is how often s's fan-out rested for other events.
func FanoutRests(s *Service) int {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	return s.gate.rests
}
