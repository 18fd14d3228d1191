//go:build !linux

package main

import "syscall"

// routerProcAttr: without Linux's parent-death signal, an orphaned router
// must be stopped by hand if the suite itself is killed.
func routerProcAttr() *syscall.SysProcAttr { return nil }
