package dnspub

import (
	"sync"
	"time"
)

// logLimiter bounds the logs of events anyone can cause with spoofed,
// unauthenticated packets (a bad TSIG, a refused transfer, a refused TCP
// connection): without it 40 000 such packets wrote 6.5 MB of log in 2.4 s.
// Each kind of event may log a burst, then one record per interval; the
// metrics count every event. A record says how many were left out before
// it.
type logLimiter struct {
	burst    float64
	interval time.Duration
	now      func() time.Time

	mu    sync.Mutex
	kinds map[string]*logBucket
}

type logBucket struct {
	tokens     float64
	last       time.Time
	suppressed uint64
}

func newLogLimiter(burst int, interval time.Duration) *logLimiter {
	return &logLimiter{burst: float64(burst), interval: interval, now: time.Now, kinds: map[string]*logBucket{}}
}

// allow reports whether an event of kind may be logged now, and how many
// of its kind were not logged since the last one that was.
func (l *logLimiter) allow(kind string) (ok bool, suppressed uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.kinds[kind]
	if b == nil {
		b = &logBucket{tokens: l.burst, last: now}
		l.kinds[kind] = b
	}
	b.tokens = min(l.burst, b.tokens+float64(now.Sub(b.last))/float64(l.interval))
	b.last = now
	if b.tokens < 1 {
		b.suppressed++
		return false, 0
	}
	b.tokens--
	n := b.suppressed
	b.suppressed = 0
	return true, n
}
