package config

import (
	"reflect"
	"strings"
	"testing"
)

// Every top-level key of the configuration is either taken live by a
// reload or listed in FixedSettings: a key added later and forgotten in
// both would be silently ignored by a reload.
func TestEveryKeyReloadsOrIsFixed(t *testing.T) {
	live := map[string]bool{"brokers": true, "routes": true, "admin": true, "log": true} // brokers' dial settings, routes, token, level
	var c Config
	fixed := map[string]bool{}
	for _, s := range c.FixedSettings() {
		fixed[strings.SplitN(s.Key, ".", 2)[0]] = true
	}
	typ := reflect.TypeOf(c)
	for i := range typ.NumField() {
		key := strings.Split(typ.Field(i).Tag.Get("yaml"), ",")[0]
		if key == "" || key == "-" {
			continue
		}
		if !live[key] && !fixed[key] {
			t.Errorf("configuration key %q: neither reloaded live nor in FixedSettings (config/reload.go)", key)
		}
	}
}
