package main

import "syscall"

// routerProcAttr makes the kernel kill the router if the suite dies
// without cleaning up (kill -9, a crash), so no orphan router keeps
// retrying against proxies that are gone.
func routerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
