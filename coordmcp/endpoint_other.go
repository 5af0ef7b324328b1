//go:build !unix

package coordmcp

import (
	"io/fs"
	"os"
)

// openFlags open the endpoint file (no O_NOFOLLOW here).
const openFlags = os.O_RDONLY

// untrusted says why an opened endpoint file is not one the supervising
// process published ("" when it is): here only that it is a regular
// file, since owner and mode bits cannot be checked.
func untrusted(fi fs.FileInfo) string {
	if !fi.Mode().IsRegular() {
		return "is not a regular file"
	}
	return ""
}
