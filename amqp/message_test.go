package amqp

import (
	"testing"
)

// The zero Message reads as an empty one; a new one takes annotations.
func TestMessageAccessors(t *testing.T) {
	var zero Message
	if !zero.IsZero() || zero.Annotation("a") != nil || zero.PropertyString("p") != "" || zero.Data() != nil {
		t.Fatal("the zero message is not empty")
	}
	zero.DeleteAnnotation("a") // no panic
	m := NewMessage([]byte("body"))
	m.SetAnnotation("x-a", "v")
	m.SetSubject("s")
	m.GoAMQP().ApplicationProperties = map[string]any{"p": "q", "n": int64(1)}
	if m.AnnotationString("x-a") != "v" || m.PropertyString("p") != "q" || m.PropertyString("n") != "" ||
		string(m.Data()) != "body" || *m.GoAMQP().Properties.Subject != "s" {
		t.Fatalf("accessors: %+v", m.GoAMQP())
	}
	m.DeleteAnnotation("x-a")
	if m.Annotation("x-a") != nil {
		t.Fatal("annotation not deleted")
	}
}
