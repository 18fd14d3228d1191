package router

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/internal/ownfile"
	"github.com/fedrouter/fedrouter/store/pgstore"
	"github.com/fedrouter/fedrouter/topology"
)

// LoadConfig reads a configuration file and judges everything the
// router's start would refuse of it, without starting anything: the
// file's rules and the files it names (config.LoadFor), then what only
// the router's parts check (preflight). Every problem at once, as a
// *config.Error. run calls it with config.ModeRun before it takes the
// state lock, check-config with config.ModeCheck: what run refuses,
// check-config refuses first, in the same words. notes are what
// ModeCheck could not judge (files this user may not read).
func LoadConfig(path string, mode config.Mode) (cfg *config.Config, notes []string, err error) {
	return config.LoadFor(path, mode, func(c *config.Config) ([]string, []string) { return preflight(c, mode) })
}

// preflight is what the start's parts refuse of a configuration that
// config cannot judge alone: the link-state node's own rules, the store
// URL's syntax, the admin token generated at an earlier start, a file in
// the way of the admin socket. c may hold problems config reported;
// what cannot be judged because of them is left alone.
func preflight(c *config.Config, mode config.Mode) (problems, notes []string) {
	add := func(key, format string, args ...any) {
		problems = append(problems, c.Where(key)+": "+fmt.Sprintf(format, args...))
	}
	if c.Flooding() {
		if secret, err := c.TopologySecret(); err == nil && secret != "" {
			if _, err := topology.New(topoConfig(c, secret)); err != nil {
				add("topology", "%s", strings.ReplaceAll(err.Error(), topology.ErrConfig.Error()+": ", "topology: "))
			}
		}
	}
	if c.Cluster != nil {
		if url, err := c.StoreURL(); err == nil {
			if err := pgstore.CheckURL(url); err != nil {
				add("cluster", "cluster store: %s", strings.TrimPrefix(err.Error(), "store: "))
			}
		}
	}
	if c.AdminOff() {
		return problems, notes
	}
	if tok, err := c.AdminToken(); err == nil && tok == "" {
		// No token configured: the one generated at an earlier start is
		// read, under ownfile's rules.
		path := c.GeneratedTokenPath()
		_, err := readOwnTokenFile(path)
		switch {
		case err == nil, errors.Is(err, fs.ErrNotExist):
		case mode == config.ModeCheck && (ownfile.OwnedByOther(path) || errors.Is(err, fs.ErrPermission)):
			notes = append(notes, fmt.Sprintf("%s: not checked: admin API generated token: %v (the router's user may read it: run check-config as that user)", c.Where("admin"), err))
		default:
			add("admin", "admin API: generated token %s: %v", path, err)
		}
	}
	if sock, ok := c.AdminSocketPath(); ok {
		if err := checkSocketPath(sock); err != nil {
			add("admin", "admin API: %v", err)
		}
	}
	return problems, notes
}
