package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// LinkCNIPlugins fills dir with symlinks to every plugin of the machine's
// SystemCNIBinDir, so a containerd whose bin_dir is dir runs the same
// plugins plus those written into dir (podnet's chained plugin), and the
// machine's folder is never written. Links already there are kept.
func LinkCNIPlugins(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cni bin folder %q: %w", dir, err)
	}
	ents, err := os.ReadDir(SystemCNIBinDir)
	if err != nil {
		return fmt.Errorf("cni plugins in %q: %w", SystemCNIBinDir, err)
	}
	var errs []error
	for _, e := range ents {
		err := os.Symlink(filepath.Join(SystemCNIBinDir, e.Name()), filepath.Join(dir, e.Name()))
		if err != nil && !errors.Is(err, os.ErrExist) {
			errs = append(errs, fmt.Errorf("link cni plugin %q into %q: %w", e.Name(), dir, err))
		}
	}
	return errors.Join(errs...)
}
