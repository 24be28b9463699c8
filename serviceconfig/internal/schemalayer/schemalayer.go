// Package schemalayer connects package serviceconfig to its JSON Schema
// layer, package serviceconfig/schema, without importing it: the schema
// library and its dependencies cost a program about 1.5 MB, and a gRPC
// client using the resolver only parses, selects and validates, which the
// Go rules do alone. Programs that lint (the CLI, the publisher) link the
// layer in by importing serviceconfig/schema, whose init sets Validate.
package schemalayer

// Finding is one failure of the JSON Schema.
type Finding struct {
	// Code is the x-code of the failing subschema (or of the nearest
	// enclosing one): a diagnostic code of package serviceconfig.
	Code string
	// Loc is the instance location of the failing value.
	Loc []string
	// AtKey is set when the finding is about the key of the last member
	// of Loc (an unknown property), not its value.
	AtKey bool
	// Message builds the schema library's message, only for the findings
	// that are shown.
	Message func() string
}

// Validate checks an instance, as encoding/json decodes a value with
// UseNumber, against the schema of a choice list (choices set) or of a
// service config. It is nil until package serviceconfig/schema is linked
// in.
var Validate func(instance any, choices bool) []Finding
