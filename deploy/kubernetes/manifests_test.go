// Package kubernetes holds the project's Kubernetes manifests; its test
// keeps them valid Kubernetes objects.
package kubernetes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// object is the typed object of a manifest's apiVersion and kind.
func object(apiVersion, kind string) (any, error) {
	switch apiVersion + " " + kind {
	case "apps/v1 Deployment":
		return new(appsv1.Deployment), nil
	case "apps/v1 StatefulSet":
		return new(appsv1.StatefulSet), nil
	case "v1 Service":
		return new(corev1.Service), nil
	case "v1 ConfigMap":
		return new(corev1.ConfigMap), nil
	case "v1 Secret":
		return new(corev1.Secret), nil
	case "v1 PersistentVolumeClaim":
		return new(corev1.PersistentVolumeClaim), nil
	case "policy/v1 PodDisruptionBudget":
		return new(policyv1.PodDisruptionBudget), nil
	}
	return nil, fmt.Errorf("apiVersion %q kind %q: not a kind these manifests use (add it to object)", apiVersion, kind)
}

// decodeStrict decodes one YAML document into its Kubernetes type, failing
// on a field the type does not have (as kubectl apply --validate=strict).
func decodeStrict(doc []byte) (any, error) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var head struct{ APIVersion, Kind string }
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, err
	}
	obj, err := object(head.APIVersion, head.Kind)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return nil, fmt.Errorf("%s: %w", head.Kind, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: more than one object in a document", head.Kind)
	}
	return obj, nil
}

// documents splits a file of YAML documents.
func documents(b []byte) [][]byte {
	var out [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---\n")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			out = append(out, d)
		}
	}
	return out
}

func stripComments(b []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			out = append(out, l...)
			out = append(out, '\n')
		}
	}
	return out
}

// TestManifestsDecodeStrictly: every manifest under deploy/kubernetes is
// a Kubernetes object of a known kind with no field its type lacks, and
// names what it refers to; the workloads give their containers limits
// and a fully named image.
func TestManifestsDecodeStrictly(t *testing.T) {
	byKind := map[string][]string{}
	names := map[string]bool{}
	decoded := 0
	var refs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, doc := range documents(b) {
			obj, err := decodeStrict(doc)
			if err != nil {
				t.Errorf("%s, document %d: %v", path, i+1, err)
				continue
			}
			decoded++
			var pod *corev1.PodSpec
			switch o := obj.(type) {
			case *appsv1.Deployment:
				byKind["Deployment"] = append(byKind["Deployment"], path)
				names["Deployment/"+o.Name] = true
				pod = &o.Spec.Template.Spec
			case *appsv1.StatefulSet:
				byKind["StatefulSet"] = append(byKind["StatefulSet"], path)
				pod = &o.Spec.Template.Spec
				for _, c := range o.Spec.VolumeClaimTemplates {
					names["volume/"+c.Name] = true
				}
			case *corev1.ConfigMap:
				names["ConfigMap/"+o.Name] = true
			case *corev1.Secret:
				names["Secret/"+o.Name] = true
			case *corev1.PersistentVolumeClaim:
				names["PersistentVolumeClaim/"+o.Name] = true
			case *policyv1.PodDisruptionBudget:
				byKind["PodDisruptionBudget"] = append(byKind["PodDisruptionBudget"], path)
			}
			if pod == nil {
				continue
			}
			for _, v := range pod.Volumes {
				names["volume/"+v.Name] = true
				switch {
				case v.ConfigMap != nil:
					refs = append(refs, path+": ConfigMap/"+v.ConfigMap.Name)
				case v.Secret != nil:
					refs = append(refs, path+": Secret/"+v.Secret.SecretName)
				case v.PersistentVolumeClaim != nil:
					refs = append(refs, path+": PersistentVolumeClaim/"+v.PersistentVolumeClaim.ClaimName)
				}
			}
			for _, c := range pod.Containers {
				if !strings.Contains(strings.Split(c.Image, "/")[0], ".") {
					t.Errorf("%s: container %s: image %q names no registry", path, c.Name, c.Image)
				}
				if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Memory().IsZero() {
					t.Errorf("%s: container %s has no memory request or limit", path, c.Name)
				}
				for _, m := range c.VolumeMounts {
					refs = append(refs, path+": volume/"+m.Name)
				}
				for _, e := range c.Env {
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
						refs = append(refs, path+": Secret/"+e.ValueFrom.SecretKeyRef.Name)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		if _, name, _ := strings.Cut(r, ": "); !names[name] {
			t.Errorf("%s, which no manifest defines", r)
		}
	}
	t.Logf("%d objects decoded", decoded)
	for _, kind := range []string{"Deployment", "StatefulSet", "PodDisruptionBudget"} {
		if len(byKind[kind]) == 0 {
			t.Errorf("no %s in deploy/kubernetes", kind)
		}
	}
}

// TestUnknownFieldFails: the strict decoding refuses a misspelt field, so
// that the test above would see one.
func TestUnknownFieldFails(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicaz: 2}\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: x, labelz: {}}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
	} {
		if _, err := decodeStrict([]byte(doc)); err == nil {
			t.Errorf("accepted:\n%s", doc)
		}
	}
	if _, err := decodeStrict([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: 2}\n")); err != nil {
		t.Errorf("a valid Deployment: %v", err)
	}
}
