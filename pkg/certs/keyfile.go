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
// good key in use (a rotation is often written in several steps), narrowed
// by keep when set (what the broken file still shows of it), and is retried
// on the next use; Err and Check report the problem meanwhile, and
// LoadErrors counts each broken content seen.
type keyFile[K any] struct {
	path  string
	parse func([]byte) (K, error)
	// keep, when set, narrows the last good key to what a file that does
	// not parse still shows of it (data is nil when the file is missing).
	keep func(last K, data []byte) K

	mu     sync.Mutex
	key    K
	loaded bool
	// raw and info are the content and stat the key in use and lastErr
	// were derived from; info is nil when the file was missing.
	raw        []byte
	info       os.FileInfo
	lastErr    error
	loadErrors uint64
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
	if err == nil && f.loaded && f.info != nil && bytes.Equal(data, f.raw) {
		f.info = info
		return f.key, nil
	}
	var key K
	if err == nil {
		key, err = f.parse(data)
	}
	if err == nil {
		f.key, f.raw, f.info, f.lastErr, f.loaded = key, data, info, nil, true
		return key, nil
	}
	err = fmt.Errorf("key file %q: %w", f.path, err)
	if !f.loaded {
		return key, err
	}
	f.broken(data, info, err)
	return f.key, nil
}

// broken records a file that does not load after a good one: the last
// good key stays in use, narrowed by keep, and a new broken content
// counts once.
func (f *keyFile[K]) broken(data []byte, info os.FileInfo, err error) {
	if f.lastErr == nil || f.lastErr.Error() != err.Error() || !bytes.Equal(f.raw, data) {
		f.loadErrors++
	}
	if f.keep != nil {
		f.key = f.keep(f.key, data)
	}
	if data == nil {
		info = nil
	}
	f.raw, f.info, f.lastErr = data, info, err
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

// Check looks at the file as it is now and returns why the key in use is
// not what it holds (the file is broken or gone, and the last good key
// stays in use), or nil.
func (f *keyFile[K]) Check() error {
	if _, err := f.current(); err != nil {
		return err
	}
	if err := f.Err(); err != nil {
		return fmt.Errorf("%w; the last good key stays in use", err)
	}
	return nil
}

// LoadErrors is how many broken contents of the file were seen after the
// first good load (each counted once, however often it is read).
func (f *keyFile[K]) LoadErrors() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loadErrors
}

// Path is the key file's path.
func (f *keyFile[K]) Path() string { return f.path }
