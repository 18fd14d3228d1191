//go:build unix

package adminclient

import "syscall"

// mayEnter: this user may enter dir (X_OK).
func mayEnter(dir string) bool {
	const search = 1
	return syscall.Access(dir, search) == nil
}
