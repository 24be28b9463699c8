package model

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/schema"
)

// publisherSchemaID is the $id of publisher.schema.json.
const publisherSchemaID = "https://raw.githubusercontent.com/grpc-config-dns/grpc-config-dns/main/model/publisher.schema.json"

// The publisher config schema (for editors, issue 18) accepts every
// example config the publisher accepts, and refuses what it must; ajv
// checks the same files in CI (.ci/schema-check.sh).
func TestPublisherSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	for id, file := range map[string]string{publisherSchemaID: "publisher.schema.json"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if doc.(map[string]any)["$id"] != id {
			t.Fatalf("%s: $id %v, want %s", file, doc.(map[string]any)["$id"], id)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema.ServiceConfig))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource(schema.ServiceConfigID, sc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(publisherSchemaID)
	if err != nil {
		t.Fatal(err)
	}
	instance := func(file string) any {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := yaml.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	files, _ := filepath.Glob("../testdata/publisher/*.yaml")
	files = append(files, "../testdata/publisher/example.json", "example.yaml")
	for _, f := range files {
		if filepath.Base(f) == "invalid.yaml" {
			continue
		}
		if err := sch.Validate(instance(f)); err != nil {
			t.Errorf("%s: the publisher accepts it, the schema does not: %v", f, err)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("zones:\n  - origin: example.test.\n    nameservers: [ns.example.net.]\n    services:\n      - name: echo\n        choices: [{serviceConfig: {}}]\n        serviceConfig: {}\n        adresses: [192.0.2.1]\n"), 0o644)
	if err := sch.Validate(instance(bad)); err == nil {
		t.Errorf("the schema accepts a service with both choices and serviceConfig and a misspelt field")
	}
}
