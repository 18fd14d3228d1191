package topology

import (
	"encoding/json"
	"fmt"
	"time"
)

// The views' ages in JSON are Go duration strings ("1.5s"), as every
// duration the admin API gives, rounded to the millisecond.

// jsonAge is an age as the JSON gives it.
func jsonAge(d time.Duration) string { return d.Round(time.Millisecond).String() }

// parseAge reads an age back; what is not a duration is an error naming
// the field.
func parseAge(what, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("topology: %s age %q: %w", what, s, err)
	}
	return d, nil
}

type routerViewJSON RouterView // the fields without the methods

func (v RouterView) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		routerViewJSON
		Age string `json:"age"`
	}{routerViewJSON(v), jsonAge(v.Age)})
}

func (v *RouterView) UnmarshalJSON(b []byte) error {
	var w struct {
		*routerViewJSON
		Age string `json:"age"`
	}
	w.routerViewJSON = (*routerViewJSON)(v)
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	var err error
	v.Age, err = parseAge("router "+v.Router, w.Age)
	return err
}

type linkViewJSON LinkView

func (v LinkView) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		linkViewJSON
		Age string `json:"age"`
	}{linkViewJSON(v), jsonAge(v.Age)})
}

func (v *LinkView) UnmarshalJSON(b []byte) error {
	var w struct {
		*linkViewJSON
		Age string `json:"age"`
	}
	w.linkViewJSON = (*linkViewJSON)(v)
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	var err error
	v.Age, err = parseAge("link "+v.From+" > "+v.To, w.Age)
	return err
}
