//go:build unix && !solaris && !aix

package journal

import "os"

// syncDir makes a new entry in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
