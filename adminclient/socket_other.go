//go:build !unix

package adminclient

// mayEnter: no Unix socket here; the CLI uses admin.listen and the token.
func mayEnter(string) bool { return false }
