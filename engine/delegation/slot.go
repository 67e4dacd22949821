package delegation

import "context"

// Slot is one turn's place under the run's cap on live turns. A turn
// waiting on its children lends them its place: it holds none while one
// of its calls is running, and takes one again when the last ends.
type Slot struct {
	live Semaphore
	mu   Locker
	held bool
	lent int
}

// TakeSlot waits for a place under live; mu is the host's.
func TakeSlot(ctx context.Context, live Semaphore, mu Locker) (*Slot, error) {
	if err := live.Acquire(ctx); err != nil {
		return nil, err
	}
	return &Slot{live: live, mu: mu, held: true}, nil
}

// Lend gives the turn's place to a call's child.
func (s *Slot) Lend() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lent++
	if s.held {
		s.held = false
		s.live.Release()
	}
}

// Reclaim takes the place back once the last call lent it ends.
func (s *Slot) Reclaim(ctx context.Context) {
	s.mu.Lock()
	s.lent--
	last := s.lent == 0
	s.mu.Unlock()
	if !last || s.live.Acquire(ctx) != nil {
		return // another call still runs, or the turn is ending anyway
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lent > 0 || s.held {
		s.live.Release()
		return
	}
	s.held = true
}

// Release gives the place up as the turn ends.
func (s *Slot) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		s.held = false
		s.live.Release()
	}
}
