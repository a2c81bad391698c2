package nodefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Install copies src into dir as name, executable. Installing the same
// file again is harmless.
func Install(src, dir, name string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("install %s: %w", name, err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return fmt.Errorf("install %s into %q: %w", name, dir, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	_, err = io.Copy(tmp, in)
	err = errors.Join(err, tmp.Chmod(0o755), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		return fmt.Errorf("install %q into %q as %s: %w", src, dir, name, err)
	}
	return nil
}
