package overlay

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// locatedOp is an Operation located in the document, its settings defaulted.
type locatedOp struct {
	op     Operation // Method upper case; KeyHeader or KeyPointer, Retention and OperationID set
	item   *openapi3.PathItem
	oper   *openapi3.Operation
	target string // JSONPath of the operation object
}

// key identifies the operation among the document's.
func (f locatedOp) key() string { return opKey(f.op.Path, f.op.Method) }

func opKey(path, method string) string { return method + " " + path }

// name is how messages and action descriptions call the operation.
func (f locatedOp) name() string {
	if f.op.OperationID == "" {
		return f.key()
	}
	return fmt.Sprintf("%s (%s)", f.op.OperationID, f.key())
}

// findOperations locates ops in doc, checks their settings, fills in the
// defaults and sorts them by path, then method.
func findOperations(doc *openapi3.T, ops []Operation) ([]locatedOp, error) {
	out := make([]locatedOp, 0, len(ops))
	seen := map[string]bool{}
	for _, op := range ops {
		op.Method = strings.ToUpper(strings.TrimSpace(op.Method))
		f, err := findOperation(doc, op)
		if err != nil {
			return nil, fmt.Errorf("operation %s: %w", opKey(op.Path, op.Method), err)
		}
		if seen[f.key()] {
			return nil, fmt.Errorf("operation %s: listed twice", f.key())
		}
		seen[f.key()] = true
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b locatedOp) int {
		return cmp.Or(cmp.Compare(a.op.Path, b.op.Path), cmp.Compare(a.op.Method, b.op.Method))
	})
	return out, nil
}

func findOperation(doc *openapi3.T, op Operation) (locatedOp, error) {
	switch {
	case op.KeyHeader != "" && op.KeyPointer != "":
		return locatedOp{}, fmt.Errorf("both a key header (%s) and a key body pointer (%s)", op.KeyHeader, op.KeyPointer)
	case op.KeyPointer != "" && !strings.HasPrefix(op.KeyPointer, "/"):
		return locatedOp{}, fmt.Errorf("key body pointer %q: a JSON Pointer begins with /", op.KeyPointer)
	case op.KeyPointer == "" && op.KeyHeader == "" && len(op.KeyPointers) == 0:
		op.KeyHeader = defaultKeyHeader
	}
	switch {
	case op.Retention < 0:
		return locatedOp{}, fmt.Errorf("negative retention %s", op.Retention)
	case op.Retention == 0:
		op.Retention = defaultRetention
	}
	if op.Method == "" {
		return locatedOp{}, errors.New("no method")
	}

	if op.Webhook != "" || op.Callback != nil {
		return findEventOperation(doc, op)
	}
	var item *openapi3.PathItem
	if doc.Paths != nil {
		item = doc.Paths.Value(op.Path)
	}
	if item == nil {
		return locatedOp{}, fmt.Errorf("path %q is not in the document", op.Path)
	}
	if item.Ref != "" {
		// The overlay addresses the document's own nodes; the operations of a
		// referenced path item live elsewhere.
		return locatedOp{}, fmt.Errorf("path item is a $ref (%s): the overlay cannot address its operations", item.Ref)
	}
	oper := item.GetOperation(op.Method)
	if oper == nil {
		return locatedOp{}, fmt.Errorf("method %s is not in the document", op.Method)
	}
	if op.OperationID == "" {
		op.OperationID = oper.OperationID
	}

	pathName, err := quoteName(op.Path)
	if err != nil {
		return locatedOp{}, err
	}
	field, err := methodSelector(op.Method)
	if err != nil {
		return locatedOp{}, err
	}
	return locatedOp{op: op, item: item, oper: oper, target: "$.paths" + pathName + field}, nil
}

// methodSelector is the JSONPath selector of method's operation within its
// path item: a fixed field such as .post, or for other methods (OpenAPI 3.2)
// an entry of additionalOperations.
func methodSelector(method string) (string, error) {
	switch method {
	case http.MethodConnect, http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodOptions,
		http.MethodPatch, http.MethodPost, http.MethodPut, http.MethodTrace, openapi3.MethodQuery:
		return "." + strings.ToLower(method), nil
	}
	name, err := quoteName(method)
	if err != nil {
		return "", err
	}
	return ".additionalOperations" + name, nil
}

// findEventOperation is findOperation for a webhook's or a callback's
// operation, whose Path it sets to a name of its place for sorting and
// messages ("webhooks petStatusChanged").
func findEventOperation(doc *openapi3.T, op Operation) (locatedOp, error) {
	field, err := methodSelector(op.Method)
	if err != nil {
		return locatedOp{}, err
	}
	var item *openapi3.PathItem
	var target string
	if op.Webhook != "" {
		op.Path = "webhooks " + op.Webhook
		item = doc.Webhooks[op.Webhook]
		name, err := quoteName(op.Webhook)
		if err != nil {
			return locatedOp{}, err
		}
		target = "$.webhooks" + name
	} else {
		cb := op.Callback
		op.Path = cb.Path + " " + strings.ToUpper(cb.Method) + " callbacks " + cb.Name + " " + cb.Expression
		var parent *openapi3.Operation
		if doc.Paths != nil {
			if pi := doc.Paths.Value(cb.Path); pi != nil {
				parent = pi.GetOperation(strings.ToUpper(cb.Method))
			}
		}
		if parent != nil {
			if ref := parent.Callbacks[cb.Name]; ref != nil && ref.Value != nil {
				item = ref.Value.Value(cb.Expression)
			}
		}
		pathName, err := quoteName(cb.Path)
		if err != nil {
			return locatedOp{}, err
		}
		parentField, err := methodSelector(strings.ToUpper(cb.Method))
		if err != nil {
			return locatedOp{}, err
		}
		name, err := quoteName(cb.Name)
		if err != nil {
			return locatedOp{}, err
		}
		expr, err := quoteName(cb.Expression)
		if err != nil {
			return locatedOp{}, err
		}
		target = "$.paths" + pathName + parentField + ".callbacks" + name + expr
	}
	if item == nil {
		return locatedOp{}, fmt.Errorf("%s is not in the document", op.Path)
	}
	oper := item.GetOperation(op.Method)
	if oper == nil {
		return locatedOp{}, fmt.Errorf("method %s is not in the document", op.Method)
	}
	if op.OperationID == "" {
		op.OperationID = oper.OperationID
	}
	return locatedOp{op: op, item: item, oper: oper, target: target + field}, nil
}
