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
	out.Annotations["x-opt-trace"] = "changed"
	out.ApplicationProperties["k"] = "changed"
	out.Header.Priority = 1
	if in.Annotations["x-opt-trace"] != "a" || in.ApplicationProperties["k"] != int32(3) || in.Header.Priority != 7 {
		t.Fatal("the copy shares state with the received message")
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
