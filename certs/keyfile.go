package certs

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"time"
)

// racyWindow is how long after a file's last modification a same-looking
// stat is not trusted: file times come from a coarse clock, so a rewrite
// within the same tick can keep the mtime, size and inode of the previous
// content. Within the window the bytes are compared instead.
const racyWindow = 2 * time.Second

// keyFile is a file-backed key that is re-read lazily: every use stats the
// path (following symlinks, so a swapped Kubernetes secret volume is seen
// at once) and reloads only when the file changed. No goroutine, no watch
// to start or stop, and the key in use is never older than the last call.
//
// A file that is missing or does not parse after a good load keeps the last
// good key in use (a rotation is often written in several steps) and is
// retried on the next use; Err reports the problem meanwhile.
type keyFile[K any] struct {
	path  string
	parse func([]byte) (K, error)

	mu      sync.Mutex
	key     K
	raw     []byte
	info    os.FileInfo
	lastErr error
}

func loadKeyFile[K any](path string, parse func([]byte) (K, error)) (*keyFile[K], error) {
	f := &keyFile[K]{path: path, parse: parse}
	if _, err := f.current(); err != nil {
		return nil, err
	}
	return f, nil
}

// current returns the key for the file as it is now.
func (f *keyFile[K]) current() (K, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	info, err := os.Stat(f.path)
	if err == nil && f.info != nil && !f.changed(info) {
		return f.key, nil
	}
	var data []byte
	if err == nil {
		data, err = os.ReadFile(f.path)
	}
	if err == nil && f.info != nil && bytes.Equal(data, f.raw) {
		f.info, f.lastErr = info, nil
		return f.key, nil
	}
	var key K
	if err == nil {
		key, err = f.parse(data)
	}
	if err != nil {
		err = fmt.Errorf("key file %q: %w", f.path, err)
		if f.info == nil {
			return key, err
		}
		f.lastErr = err
		return f.key, nil
	}
	f.key, f.raw, f.info, f.lastErr = key, data, info, nil
	return key, nil
}

func (f *keyFile[K]) changed(now os.FileInfo) bool {
	return !os.SameFile(f.info, now) ||
		!now.ModTime().Equal(f.info.ModTime()) ||
		now.Size() != f.info.Size() ||
		time.Since(now.ModTime()) < racyWindow
}

// Err is the last reload problem while an older key stays in use, or nil.
func (f *keyFile[K]) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastErr
}

// Path is the key file's path.
func (f *keyFile[K]) Path() string { return f.path }
