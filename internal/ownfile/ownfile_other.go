//go:build !unix

package ownfile

import "io/fs"

// This platform has neither O_NOFOLLOW nor uids: the type and mode checks
// stay.
const (
	noFollow = 0
	nonBlock = 0
)

func owner(fs.FileInfo) (int, bool) { return 0, false }

func describeOpenError(_ string, err error) error { return err }
