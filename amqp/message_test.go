package amqp

import (
	"reflect"
	"testing"

	goamqp "github.com/Azure/go-amqp"
)

func TestForwardCopyDropsDeliveryAnnotationsOnly(t *testing.T) {
	subject := "s"
	in := &goamqp.Message{
		Header:                &goamqp.MessageHeader{Durable: true, Priority: 7},
		DeliveryAnnotations:   goamqp.Annotations{"x-opt-hop": int64(1)},
		Annotations:           goamqp.Annotations{"x-opt-trace": "a", int64(5): "numeric key"},
		Properties:            &goamqp.MessageProperties{Subject: &subject},
		ApplicationProperties: map[string]any{"k": int32(3)},
		Data:                  [][]byte{[]byte("one"), []byte("two")},
		Footer:                goamqp.Annotations{"f": "x"},
	}
	out := WrapMessage(in).ForwardCopy().GoAMQP()
	if out.DeliveryAnnotations != nil {
		t.Fatal("delivery annotations forwarded")
	}
	if !reflect.DeepEqual(out.Annotations, in.Annotations) || !reflect.DeepEqual(out.ApplicationProperties, in.ApplicationProperties) ||
		!reflect.DeepEqual(out.Footer, in.Footer) || !reflect.DeepEqual(out.Data, in.Data) ||
		*out.Header != *in.Header || *out.Properties.Subject != "s" {
		t.Fatalf("sections changed:\n in  %+v\n out %+v", in, out)
	}
}

// A forward copy shares the received message's sections until a setter
// changes them; the received message never changes, whatever the copies
// (and copies of copies) do.
func TestForwardCopyIsCopyOnWrite(t *testing.T) {
	subject := "s"
	in := &goamqp.Message{
		DeliveryTag: []byte("source-tag"),
		Annotations: goamqp.Annotations{"x-opt-trace": "a", "x-keep": "k"},
		Properties:  &goamqp.MessageProperties{Subject: &subject},
	}
	recv := WrapMessage(in)
	a := recv.ForwardCopy()
	if a.GoAMQP().DeliveryTag != nil {
		t.Fatal("the source's delivery tag was kept")
	}
	if !sameMap(a.GoAMQP().Annotations, in.Annotations) {
		t.Fatal("an unchanged copy copied its annotations")
	}
	b := a.ForwardCopy() // a copy of a copy
	a.SetAnnotation("x-opt-trace", "changed by a")
	a.DeleteAnnotation("x-keep")
	a.SetSubject("subject of a")
	b.SetAnnotation("x-opt-trace", "changed by b")
	b.SetSubject("subject of b")
	c := recv.ForwardCopy()
	c.DeleteAnnotation("x-absent") // no change, no copy
	if !sameMap(c.GoAMQP().Annotations, in.Annotations) {
		t.Fatal("deleting an absent annotation copied the map")
	}
	c.DeleteAnnotation("x-keep")
	if in.Annotations["x-opt-trace"] != "a" || in.Annotations["x-keep"] != "k" || *in.Properties.Subject != "s" {
		t.Fatalf("the received message changed: %+v, subject %s", in.Annotations, *in.Properties.Subject)
	}
	if a.AnnotationString("x-opt-trace") != "changed by a" || a.Annotation("x-keep") != nil ||
		b.AnnotationString("x-opt-trace") != "changed by b" || b.AnnotationString("x-keep") != "k" ||
		*a.GoAMQP().Properties.Subject != "subject of a" || *b.GoAMQP().Properties.Subject != "subject of b" ||
		c.Annotation("x-keep") != nil || c.AnnotationString("x-opt-trace") != "a" {
		t.Fatalf("copies: a %+v, b %+v, c %+v", a.GoAMQP().Annotations, b.GoAMQP().Annotations, c.GoAMQP().Annotations)
	}
}

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
