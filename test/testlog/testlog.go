// Package testlog holds test helpers for capturing what servers log from
// their own goroutines.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer safe for concurrent writers, read back whole.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
