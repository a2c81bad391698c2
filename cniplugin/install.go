package cniplugin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Type is the plugin's "type" in a conflist, hence its file name in the
// node's CNI bin folder.
const Type = "podnet"

// Install copies the plugin binary src into the CNI bin folder dir as
// Type. The copy is written beside and renamed into place, so a runtime
// running the plugin meanwhile sees the old binary or the new one, never
// half of one; reinstalling the same binary is harmless.
func Install(src, dir string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("install cni plugin: %w", err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(dir, "."+Type+"-*")
	if err != nil {
		return fmt.Errorf("install cni plugin into %q: %w", dir, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	_, err = io.Copy(tmp, in)
	err = errors.Join(err, tmp.Chmod(0o755), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, Type))
	}
	if err != nil {
		return fmt.Errorf("install cni plugin %q into %q: %w", src, dir, err)
	}
	return nil
}
