package api

// Link is the body of POST /api/v1/links and /api/v1/links/delete
// (qpid-route's link add and link del): a link between two of the
// router's brokers, both ways, which the router advertises in its link
// state and whose transit it carries, as an entry of links: in the
// configuration does. Cost 0 takes the default, 1; only add reads it.
type Link struct {
	Dest string `json:"dest"`
	Src  string `json:"src"`
	Cost int    `json:"cost,omitempty"`
}
