package model

// BodyCase is one way the strict middleware builds the idem.Body: when Cond
// holds (a Go expression over req, "" for always), the body is Expr.
type BodyCase struct {
	Cond string
	Expr string
}

// StrictBody returns how the strict middleware builds the idem.Body from
// req, the operation's XRequestObject. A single case without a condition is
// a plain assignment; otherwise the cases form a switch over the bodies that
// are set, defaulting to idem.NoBody().
func (o Operation) StrictBody() []BodyCase {
	if len(o.Bodies) == 0 {
		return []BodyCase{{Expr: "idem.NoBody()"}}
	}
	cases := make([]BodyCase, 0, len(o.Bodies))
	for _, b := range o.Bodies {
		field := "req." + b.Field
		switch b.Kind {
		case BodyJSON, BodyForm:
			// A nil pointer is no body, so a lone typed body needs no test.
			cases = append(cases, BodyCase{Cond: field + " != nil", Expr: "idem.JSONBody(" + field + ")"})
		case BodyText:
			cases = append(cases, BodyCase{Cond: field + " != nil", Expr: "idem.RawBody([]byte(*" + field + "))"})
		case BodyReader:
			cases = append(cases, BodyCase{Cond: field + " != nil", Expr: "idem.ReaderBody(&" + field + ")"})
		}
	}
	if len(cases) == 1 && o.Bodies[0].Kind != BodyText {
		cases[0].Cond = ""
	}
	return cases
}

// StrictBodyExpr is the idem.Body expression when StrictBody is a single
// case without a condition, "" when the middleware needs a switch.
func (o Operation) StrictBodyExpr() string {
	if c := o.StrictBody(); len(c) == 1 && c[0].Cond == "" {
		return c[0].Expr
	}
	return ""
}

// StrictBodyIf is the one conditional case of StrictBody, nil when there
// are several or one without a condition.
func (o Operation) StrictBodyIf() *BodyCase {
	if c := o.StrictBody(); len(c) == 1 && c[0].Cond != "" {
		return &c[0]
	}
	return nil
}
