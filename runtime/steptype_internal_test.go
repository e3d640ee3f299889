package idem

import (
	"reflect"
	"testing"
	"time"
)

type shapeCharge struct {
	ID    string `json:"id"`
	Cents int
}

type shapeRenamed struct { // shapeCharge's shape: names match without case
	Identifier string `json:"ID"`
	Amount     *int64 `json:"cents,omitempty"`
	hidden     bool
	Ignored    string `json:"-"`
}

type shapeEmbedded struct {
	shapeBase
	Cents int
}

type shapeBase struct {
	ID string `json:"id"`
}

type shapeNode struct {
	*shapeNode
	Next  *shapeNode
	Value string
}

// TestJSONShape: types that encoding/json reads into each other faithfully
// share a shape; a renamed field, another kind or a changed element does
// not; recursive types end.
func TestJSONShape(t *testing.T) {
	shape := func(v any) string { return stepTypeOf(reflect.TypeOf(v)).shape }
	same := [][2]any{
		{shapeCharge{}, shapeRenamed{hidden: true}},
		{shapeCharge{}, &shapeCharge{}},
		{shapeCharge{}, shapeEmbedded{}},
		{[]int{}, []uint8x{}},
		{map[string]float64{}, map[string]float32{}},
		{time.Time{}, &time.Time{}},
	}
	for _, p := range same {
		if shape(p[0]) != shape(p[1]) {
			t.Errorf("%T and %T: shapes %s and %s, want one", p[0], p[1], jsonShape(reflect.TypeOf(p[0]), map[reflect.Type]bool{}), jsonShape(reflect.TypeOf(p[1]), map[reflect.Type]bool{}))
		}
	}
	differ := [][2]any{
		{struct{ Charge string }{}, struct {
			ChargeID string `json:"charge_id"`
		}{}},
		{struct{ Charge string }{}, 0},
		{struct{ N int }{}, struct{ N float64 }{}},
		{struct{ N int }{}, struct {
			N int `json:",string"`
		}{}},
		{[]byte{}, []int{}},
		{[]string{}, [2]string{}},
		{time.Time{}, ""},
		{struct{ A, B string }{}, struct{ A string }{}},
	}
	for _, p := range differ {
		if shape(p[0]) == shape(p[1]) {
			t.Errorf("%T and %T: one shape %s", p[0], p[1], jsonShape(reflect.TypeOf(p[0]), map[reflect.Type]bool{}))
		}
	}
	if got := jsonShape(reflect.TypeOf(shapeNode{shapeNode: &shapeNode{}}), map[reflect.Type]bool{}); got != "{next:recursive:github.com/idemgen/idemgen/runtime.shapeNode,value:string}" {
		t.Errorf("recursive type: %s", got)
	}
}

type uint8x uint16 // not bytes: a slice of it is an array of numbers
