package regularfile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is a path that names something other than a regular
// file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

// Error says what the path names.
func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is not a regular file (%s)", e.Path, e.Mode.Type())
}

// Open opens path for reading without blocking and returns it only when
// it is a regular file; anything else is closed again and refused with a
// *NotRegularError. It returns the file's FileInfo too, as the callers
// read its size. A missing path is an error matching fs.ErrNotExist.
func Open(path string) (*os.File, fs.FileInfo, error) {
	return OpenFile(path, os.O_RDONLY, 0)
}

// OpenFile is Open with os.OpenFile's flag and perm, for a file that is
// appended to or created: a FIFO in place of a journal would otherwise
// block its writer's first read of the tail for ever.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	// O_NONBLOCK makes opening a FIFO that no one writes return at once;
	// on a regular file it changes nothing.
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return f, st, nil
}
