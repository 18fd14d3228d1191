package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fedrouter/fedrouter/internal/ownfile"
	"github.com/fedrouter/fedrouter/routes"
)

// The files a configuration names, read as the router's start reads them:
// secrets, certificates, the cluster's store URL, the state file and its
// journal. check-config (ModeCheck) and run (ModeRun) judge them here, so
// that what run would refuse, check-config refuses first, in the same
// words; the CLI reading a router's file (ModeRead) does not.

// judged says whether err, from reading a file the configuration names
// as the router would, is a problem in c's mode. ModeRead judges no file
// missing or not readable here; ModeCheck notes one this user may not
// read (the router's may) and judges a missing one; ModeRun judges all.
// key places the note in the file.
func (c *Config) judged(key string, err error) bool {
	switch {
	case err == nil:
		return false
	case c.mode == ModeRun:
		return true
	case errors.Is(err, fs.ErrPermission):
		c.note(key, err)
		return false
	case errors.Is(err, fs.ErrNotExist):
		return c.mode != ModeRead
	}
	return true
}

// note records, in ModeCheck, a file this user cannot judge.
func (c *Config) note(key string, err error) {
	if c.mode == ModeCheck {
		c.notes = append(c.notes, fmt.Sprintf("%s: not checked: %v (the router's user may read it: run check-config as that user)", c.at(key), err))
	}
}

// checkStartFiles judges, in ModeCheck and ModeRun, the files the start
// reads beyond those validate reads in every mode: each broker's
// password_file and TLS files, the cluster's store URL, the state file.
func (c *Config) checkStartFiles() []string {
	var p []string
	for i, b := range c.Brokers {
		key := fmt.Sprintf("brokers[%d]", i)
		if b.PasswordFile != "" {
			if _, err := b.brokerConfig(true); c.judged(key, err) {
				p = append(p, fmt.Sprintf("%s: broker %q: %v", c.at(key), b.Name, err))
			}
		}
		if bc, err := b.brokerConfig(false); err == nil {
			if err := bc.TLS.Check(); c.judged(key, err) {
				p = append(p, fmt.Sprintf("%s: broker %q: %v", c.at(key), b.Name, err))
			}
		}
	}
	if c.Cluster != nil {
		// The start reads the store's URL before anything else of the
		// cluster: without one a member cannot run.
		if _, err := c.StoreURL(); c.judged("cluster", err) {
			p = append(p, fmt.Sprintf("%s: %s", c.at("cluster"), strings.TrimPrefix(err.Error(), "config: ")))
		}
	}
	return append(p, c.checkState()...)
}

// othersMayWrite says whether dir's mode lets users other than its owner
// change it (ownfile.CheckDir's first rule, whoever checks).
func othersMayWrite(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.Mode().Perm()&0o022 != 0
}

// DropCommand is the command that drops the routes with ids from the
// state file of the configuration at file (fedrouter state drop).
func DropCommand(file string, ids ...string) string {
	return "fedrouter state drop --config " + file + " " + strings.Join(ids, " ")
}

// checkState judges the state file and its journal as the start restores
// them (routes.LoadJournaled, then each route on this configuration's
// network): a damaged file, or a route naming a broker no longer
// configured, stops the start. Each such route is named where it is
// written, with the command that drops it.
func (c *Config) checkState() []string {
	if c.Cluster != nil || !nameRE.MatchString(c.RouterID) {
		return nil // a member keeps no state file; no id, no file name
	}
	path := c.StatePath()
	dir := filepath.Dir(path)
	if err := ownfile.CheckDir(dir); errors.Is(err, fs.ErrNotExist) {
		return nil // made at the first start: no routes to restore
	} else if err != nil {
		if c.mode == ModeCheck && ownfile.OwnedByOther(dir) && !othersMayWrite(dir) {
			c.note("state_file", err) // the router's user's directory: its own rules
			return nil
		}
		return []string{fmt.Sprintf("%s: state directory: %v", c.at("state_file"), err)}
	}
	saved, _, err := routes.LoadJournaled(path)
	if err != nil {
		if c.mode == ModeCheck && (ownfile.OwnedByOther(path) || ownfile.OwnedByOther(path+routes.JournalSuffix) || errors.Is(err, fs.ErrPermission)) {
			c.note("state_file", err)
			return nil
		}
		return []string{fmt.Sprintf("%s: %s", c.at("state_file"), strings.TrimPrefix(err.Error(), "routes: "))}
	}
	brokers := map[string]bool{}
	for _, b := range c.Brokers {
		brokers[b.Name] = true
	}
	net := routes.Network{Flooding: c.Flooding(), Attached: func(b string) bool { return brokers[b] }}
	var p []string
	var where map[string]string
	for _, s := range saved {
		_, err := s.WithDefaults().Check(net)
		var se *routes.SpecError
		if !errors.As(err, &se) {
			continue
		}
		if where == nil {
			where = savedLines(path)
		}
		at, ok := where[s.ID()]
		if !ok {
			at = path
		}
		for _, pr := range se.Problems {
			p = append(p, fmt.Sprintf("%s: saved route %s (id %s): %s; drop it: %s", at, s, s.ID(), pr, DropCommand(c.file, s.ID())))
		}
	}
	return p
}

// savedLines places each saved route by id: "file:line" of its last
// writing, in the state file or, later, in its journal. Best effort: a
// route it cannot place is named by the state file alone.
func savedLines(path string) map[string]string {
	out := map[string]string{}
	if data, err := os.ReadFile(path); err == nil {
		for id, line := range snapshotLines(data) {
			out[id] = fmt.Sprintf("%s:%d", path, line)
		}
	}
	jpath := path + routes.JournalSuffix
	if data, err := os.ReadFile(jpath); err == nil {
		for n, line := range bytes.Split(data, []byte("\n")) {
			var l struct {
				Add *routes.Spec `json:"add"`
			}
			if json.Unmarshal(line, &l) == nil && l.Add != nil {
				out[l.Add.ID()] = fmt.Sprintf("%s:%d", jpath, n+1)
			}
		}
	}
	return out
}

// snapshotLines maps the id of each route of a state file to the line its
// object starts on.
func snapshotLines(data []byte) map[string]int {
	out := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return out
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return out
		}
		if key != "routes" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return out
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return out
		}
		for dec.More() {
			off := int(dec.InputOffset())
			for off < len(data) && strings.IndexByte(" \t\r\n,", data[off]) >= 0 {
				off++
			}
			var s routes.Spec
			if dec.Decode(&s) != nil {
				return out
			}
			out[s.ID()] = 1 + bytes.Count(data[:off], []byte("\n"))
		}
		return out
	}
	return out
}
