package core

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"time"
)

// IDSource hands out ids that sort by creation time: 44 bits of unix
// milliseconds, then 20 bits that start at random in each millisecond and
// count up. Ids from one source never repeat, and rows keyed by them are
// appended to their indexes rather than scattered through them.
type IDSource struct {
	mu   sync.Mutex
	last uint64
}

// Next returns prefix followed by 16 hex digits.
func (s *IDSource) Next(prefix string, now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	v := uint64(now.UnixMilli())<<20 | uint64(binary.BigEndian.Uint32(b[:]))&(1<<20-1)
	s.mu.Lock()
	if v <= s.last {
		v = s.last + 1
	}
	s.last = v
	s.mu.Unlock()
	return fmt.Sprintf("%s%016x", prefix, v)
}
