package spades

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// Backoff says how long to wait before each new attempt after a failure:
// Initial, then Multiplier times longer each time up to Max, each delay drawn
// at random from [delay*(1-Jitter), delay] so that clients cut at the same
// moment do not come back at the same moment. Fields left at zero take
// DefaultBackoff's values.
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	Jitter     float64 // 0 to 1 (negative: none)
	// MaxAttempts is the number of attempts in a row that may fail before
	// the call or the session gives up. A session's count starts again once a
	// resumed Play call has delivered a message or stayed up for a second.
	MaxAttempts int
}

// DefaultBackoff is 100 ms, doubling up to 5 s, half jitter, 10 attempts
// (about 20 s in all before a session gives up on an unreachable server).
var DefaultBackoff = Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2, Jitter: 0.5, MaxAttempts: 10}

func (b Backoff) withDefaults() Backoff {
	d := DefaultBackoff
	if b.Initial > 0 {
		d.Initial = b.Initial
	}
	if b.Max > 0 {
		d.Max = b.Max
	}
	if b.Multiplier >= 1 {
		d.Multiplier = b.Multiplier
	}
	if b.Jitter > 0 && b.Jitter <= 1 {
		d.Jitter = b.Jitter
	} else if b.Jitter < 0 {
		d.Jitter = 0
	}
	if b.MaxAttempts > 0 {
		d.MaxAttempts = b.MaxAttempts
	}
	return d
}

// delay is the wait before attempt n+1 after n failures in a row (n >= 1).
func (b Backoff) delay(n int) time.Duration {
	d := float64(b.Initial) * math.Pow(b.Multiplier, float64(n-1))
	if d > float64(b.Max) {
		d = float64(b.Max)
	}
	d -= d * b.Jitter * rand.Float64()
	return time.Duration(d)
}

// sleep waits for d or until ctx ends; false if ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
