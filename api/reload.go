package api

// Reload is the answer to POST /api/v1/reload (and `fedrouter reload`,
// and the log line of a SIGHUP): what the configuration file's reload
// changed. Lists are never null; an empty answer (Changed false) means the
// file says what runs already.
type Reload struct {
	// File is the configuration file read.
	File string `json:"file"`
	// Changed: anything at all was changed.
	Changed bool `json:"changed"`
	// RoutesAdded, RoutesRemoved and RoutesChanged are configured routes
	// started, stopped, and stopped and started again with their new
	// settings (same identity); RoutesUnchanged counts those left running
	// untouched (their links stay attached).
	RoutesAdded     []ReloadRoute `json:"routes_added"`
	RoutesRemoved   []ReloadRoute `json:"routes_removed"`
	RoutesChanged   []ReloadRoute `json:"routes_changed"`
	RoutesUnchanged int           `json:"routes_unchanged"`
	// BrokersRedialed are the brokers whose connections were dropped and
	// dialled again with new settings (URLs, credentials, SASL, TLS files),
	// by name, sorted.
	BrokersRedialed []string `json:"brokers_redialed"`
	// Settings are the other settings taken on, in words ("admin token",
	// "log level info -> debug"); a token is never shown.
	Settings []string `json:"settings"`
}

// ReloadRoute is one configured route a reload added, removed or
// changed: its id and its route in words (as `route list` shows it).
type ReloadRoute struct {
	ID    string `json:"id"`
	Route string `json:"route"`
}
