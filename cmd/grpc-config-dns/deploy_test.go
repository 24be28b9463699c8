package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// The Kubernetes manifests (deploy/kubernetes) hold what works (issue 18):
// the ConfigMap's publisher config is valid with the TSIG secret from the
// environment the Deployment fills from the Secret, and every flag of the
// container's args is one serve has.
func TestKubernetesManifests(t *testing.T) {
	docs := map[string]map[string]any{}
	for _, f := range []string{"configmap.yaml", "secret.yaml", "deployment.yaml", "service.yaml"} {
		b, err := os.ReadFile("../../deploy/kubernetes/" + f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var d map[string]any
			if err := dec.Decode(&d); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			docs[d["kind"].(string)] = d
		}
	}
	for _, kind := range []string{"ConfigMap", "Secret", "Deployment", "Service", "PersistentVolumeClaim"} {
		if docs[kind] == nil {
			t.Fatalf("no %s in deploy/kubernetes", kind)
		}
	}
	t.Setenv("XFR_KEY_SECRET", "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI=")
	pub := docs["ConfigMap"]["data"].(map[string]any)["publisher.yaml"].(string)
	if _, ds := model.Parse([]byte(pub)); ds.HasErrors() {
		t.Errorf("the ConfigMap's publisher.yaml is invalid: %v", ds.Err())
	}
	spec := docs["Deployment"]["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	c := spec["containers"].([]any)[0].(map[string]any)
	args := c["args"].([]any)
	flags := serveCmd(&env{}).Flags()
	if args[0] != "serve" {
		t.Fatalf("args %v: want serve first", args)
	}
	for _, a := range args[1:] {
		name, _, _ := strings.Cut(strings.TrimPrefix(a.(string), "--"), "=")
		if flags.Lookup(name) == nil {
			t.Errorf("the Deployment passes --%s, which serve does not have", name)
		}
	}
	if env := c["env"].([]any)[0].(map[string]any); env["name"] != "XFR_KEY_SECRET" || env["valueFrom"].(map[string]any)["secretKeyRef"] == nil {
		t.Errorf("the TSIG secret must come from the Secret: %v", env)
	}
}

// The workloads of store mode (deploy/kubernetes/store, store-etcd) pass
// serve only flags it has, and their settings file is one serve --store
// reads (deploy/kubernetes's own test decodes them as Kubernetes objects).
func TestKubernetesStoreManifests(t *testing.T) {
	flags := serveCmd(&env{}).Flags()
	for _, f := range []string{"store/statefulset.yaml", "store-etcd/deployment.yaml"} {
		b, err := os.ReadFile("../../deploy/kubernetes/" + f)
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := yaml.NewDecoder(bytes.NewReader(b)).Decode(&d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		spec := d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		args := spec["containers"].([]any)[0].(map[string]any)["args"].([]any)
		if args[0] != "serve" {
			t.Fatalf("%s: args %v: want serve first", f, args)
		}
		store := false
		for _, a := range args[1:] {
			name, _, _ := strings.Cut(strings.TrimPrefix(a.(string), "--"), "=")
			if flags.Lookup(name) == nil {
				t.Errorf("%s passes --%s, which serve does not have", f, name)
			}
			store = store || name == "store"
		}
		if !store {
			t.Errorf("%s: no --store", f)
		}
	}
	b, err := os.ReadFile("../../deploy/kubernetes/store/settings.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal(b, &cm); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XFR_KEY_SECRET", "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI=")
	settings := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(settings, []byte(cm.Data["settings.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if cfg, err := (&env{stderr: &stderr}).readSettings(settings); err != nil || len(cfg.Keys) != 1 {
		t.Errorf("the store's settings.yaml: %v\n%s", err, stderr.String())
	}
}
